"""SeaKR in LlamaIndex agents, offline: ``seakr_search_tool`` (SeaKR's retrieval loop as the agent's tool, its
phases streamed with the agent's events) and ``SeaKRQueryEngine.as_tool()`` in a real ``FunctionAgent`` /
``AgentWorkflow``; the agent's model is LlamaIndex's ``MockFunctionCallingLLM`` with a script, the self-aware model
the scripted back-end of ``llamaindex_fakes``."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import QueryEngineTool
from llamaindex_fakes import CONFIG, QUESTION, NodeListRetriever, llm_for

from llamaindex_seakr import (
    KnowledgeGatheredEvent,
    PassagesRerankedEvent,
    SeaKRQueryEngine,
    StepAssessedEvent,
    seakr_search_tool,
)
from llamaindex_seakr.agent_tool import NO_PASSAGES, SEARCH_TOOL_DESCRIPTION, SeaKRSearch
from llamaindex_seakr.query_engine import QUERY_TOOL_DESCRIPTION


def agent_model(tool_name: str, seen: list[str]) -> MockFunctionCallingLLM:
    """Calls ``tool_name`` with the user's question, then answers "France" (keeping what the tool returned)."""

    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        tool_results = [m for m in messages if m.role == MessageRole.TOOL]
        if not tool_results:
            call = ToolCallBlock(tool_call_id="c1", tool_name=tool_name, tool_kwargs={"question": QUESTION})
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        seen.append(str(tool_results[-1].content))
        return ChatMessage(role=MessageRole.ASSISTANT, content="France")

    return MockFunctionCallingLLM(response_generator=respond, is_chat_model=True)


async def run(agent: Any, question: str = QUESTION) -> tuple[Any, list[Any]]:
    handler = agent.run(user_msg=question)
    events = [ev async for ev in handler.stream_events()]
    return await handler, events


async def test_the_search_tool_runs_seakrs_loop_and_streams_its_phases_with_the_agents_events():
    retriever = NodeListRetriever()
    seen: list[str] = []
    tool = seakr_search_tool(retriever, llm_for(), CONFIG)
    assert tool.metadata.name == "seakr_search" and tool.metadata.description == SEARCH_TOOL_DESCRIPTION
    assert set(tool.metadata.get_parameters_dict()["properties"]) == {"question"}  # the Context is injected
    agent = FunctionAgent(tools=[tool], llm=agent_model("seakr_search", seen), system_prompt="Answer briefly.")
    result, events = await run(agent)
    assert str(result.response.content) == "France"
    assert retriever.queries == ["Eiffel Tower stands"]  # the loop's masked query, not the agent model's words
    assert seen == ["Page 2: text of p2"]  # the passage the loop kept, as the agent's model read it
    kinds = [type(e) for e in events]
    assert StepAssessedEvent in kinds and PassagesRerankedEvent in kinds
    gathered = next(e for e in events if isinstance(e, KnowledgeGatheredEvent))
    assert [n.node.node_id for n in gathered.nodes] == ["p2"] and gathered.stop == "answer found"
    assert gathered.rationale[-1] == "So the answer is France" and gathered.searches == 1
    # SeaKR's phases come before the tool's result, in the one stream the agent's events use
    assert kinds.index(KnowledgeGatheredEvent) < kinds.index(ToolCallResult)


async def test_the_search_tool_in_an_agent_workflow():
    tool = seakr_search_tool(NodeListRetriever(), llm_for(), CONFIG, name="search", description="Search.")
    seen: list[str] = []
    workflow = AgentWorkflow(
        agents=[
            FunctionAgent(name="researcher", description="Finds facts.", tools=[tool], llm=agent_model("search", seen))
        ]
    )
    result, events = await run(workflow)
    assert str(result.response.content) == "France" and seen == ["Page 2: text of p2"]
    assert any(isinstance(e, KnowledgeGatheredEvent) for e in events)


async def test_the_search_tool_called_directly_and_with_nothing_found():
    search = SeaKRSearch(NodeListRetriever(), llm_for(), CONFIG)
    gathered, tracker = await search.gather(QUESTION)
    assert [tracker.node(p).node.node_id for p in gathered.passages] == ["p2"]
    empty = SeaKRSearch(NodeListRetriever(nodes=[]), llm_for(), CONFIG)
    assert await empty(QUESTION) == NO_PASSAGES and await search(QUESTION) == "Page 2: text of p2"
    with pytest.raises(ValueError, match="empty"):
        await search.gather("  ")


def test_the_search_tool_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match="UncertaintyGatedRetriever in a RetrieverTool"):
        seakr_search_tool(NodeListRetriever(), llm_for(), CONFIG.with_(mode="single_hop"))
    with pytest.raises(TypeError, match="config must be a SeaKRConfig"):
        seakr_search_tool(NodeListRetriever(), llm_for(), {"k": 4})


async def test_the_query_engine_as_a_tool_answers_with_seakrs_answer():
    engine = SeaKRQueryEngine(NodeListRetriever(), llm_for(), CONFIG)
    tool = engine.as_tool()
    assert isinstance(tool, QueryEngineTool) and tool.metadata.name == "seakr_answer"
    assert tool.metadata.description == QUERY_TOOL_DESCRIPTION
    seen: list[str] = []
    agent = FunctionAgent(tools=[tool], llm=agent_model("seakr_answer", seen))
    result, events = await run(agent)
    assert seen == ["France"] and str(result.response.content) == "France"
    output = next(e for e in events if isinstance(e, ToolCallResult)).tool_output
    assert output.raw_output.metadata["stop_reason"] == "answer found"
