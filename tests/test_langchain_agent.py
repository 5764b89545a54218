"""``SeaKRMiddleware`` (SeaKR's loop, and the one-shot gate) and ``seakr_gate_tool`` in a real
``langchain.agents.create_agent`` graph, offline: the self-aware model is the scripted back-end of ``fakes.py`` (real
EigenScore over vectors the script spreads) and the agent's model a scripted chat model that records what it was
shown.  The real-model version is in ``test_langchain_real.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fakes import Reply, ScriptedBackend
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import create_retriever_tool
from test_langchain_adapters import DOCS, ListRetriever
from test_reasoner import CONFIG
from test_reasoner_components import eiffel

from langchain_seakr import AgentGate, AgentLoop, GateDecision, SeaKRMiddleware, seakr_gate_tool
from seakr_integrations.reasoning.decisions import GateReason

QUESTION = "Which country is the Eiffel Tower in?"


class ScriptedChat(GenericFakeChatModel):
    """The agent's model: replies in order, and keeps every message list it was called with."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.custom: list[tuple[str, dict[str, Any]]] = []
        self.llm_runs = 0

    def on_custom_event(self, name, data, *, run_id, **kw):
        self.custom.append((name, data))

    def on_llm_start(self, serialized, prompts, **kw):
        self.llm_runs += 1


def sure(prompt, config):
    return Reply("It is in France", 0.0)


def chat(*replies: AIMessage) -> ScriptedChat:
    return ScriptedChat(messages=iter(replies), seen=[])


def search_call(query: str = "Eiffel Tower") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "search", "args": {"query": query}, "id": "call_1", "type": "tool_call"}])


def agent_with(model: ScriptedChat, retriever: ListRetriever, backend: Any, one_shot: bool = True, **settings: Any):
    tool = create_retriever_tool(retriever, "search", "Search passages.", response_format="content_and_artifact")
    middleware = SeaKRMiddleware(llm=backend, config=CONFIG, retriever=tool, one_shot=one_shot, **settings)
    return create_agent(model, tools=[tool], system_prompt="Answer briefly.", middleware=[middleware])


def test_sure_retrieves_nothing_and_skips_the_retriever_tool():
    retriever = ListRetriever(queries=[])
    model = chat(search_call(), AIMessage("France"))
    events = Events()
    state = agent_with(model, retriever, ScriptedBackend(sure)).invoke(
        {"messages": [("user", QUESTION)]}, config={"callbacks": [events]}
    )
    decision = GateDecision.from_dict(state["seakr_decision"])
    assert not decision.retrieve and decision.reason is GateReason.CONFIDENT
    assert state["seakr_passages"] == [] and retriever.queries == []  # no search: forced or asked for
    skipped = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert skipped.content.startswith("Not searched: uncertainty") and skipped.tool_call_id == "call_1"
    assert state["messages"][-1].content == "France"
    assert "Use this passage" not in model.seen[0][0].content  # nothing added to the context
    assert [n for n, _ in events.custom] == ["seakr_gate_decided"] and events.llm_runs >= 2  # self-aware + agent


def test_sure_lets_the_tool_run_when_told_to():
    retriever = ListRetriever(queries=[])
    model = chat(search_call("Eiffel"), AIMessage("France"))
    state = agent_with(model, retriever, ScriptedBackend(sure), skip_tool_when_sure=False).invoke(
        {"messages": [("user", QUESTION)]}
    )
    assert retriever.queries == ["Eiffel"] and state["seakr_passages"] == []
    assert next(m for m in state["messages"] if isinstance(m, ToolMessage)).content.startswith("text of p1")


def test_unsure_retrieves_the_masked_query_and_keeps_the_surest_passage_in_context():
    retriever = ListRetriever(queries=[])
    model = chat(AIMessage("France"))
    events = Events()
    state = agent_with(model, retriever, ScriptedBackend(eiffel)).invoke(
        {"messages": [("user", QUESTION)]}, config={"callbacks": [events]}
    )
    decision = GateDecision.from_dict(state["seakr_decision"])
    assert decision.retrieve and decision.reason is GateReason.UNCERTAIN and decision.generation.endswith("Germany")
    assert retriever.queries == ["Eiffel Tower stands"]  # "Germany" was generated unsure: masked out of the query
    (kept,) = state["seakr_passages"]
    assert kept["id"] == "p2" and kept["metadata"]["seakr_chosen"] and kept["metadata"]["seakr_gate_retrieve"]
    assert kept["metadata"]["source"] == "wiki"  # the retriever's own metadata stays
    system = model.seen[0][0]
    assert system.type == "system" and system.content.startswith("Answer briefly.") and "text of p2" in system.content
    names = [n for n, _ in events.custom]
    assert names == ["seakr_passages_retrieved", "seakr_passages_reranked", "seakr_gate_decided"]
    assert events.custom[0][1]["query"] == "Eiffel Tower stands"
    assert events.custom[1][1]["chosen_passage_id"] == "p2" and events.custom[2][1]["decision"]["num_documents"] == 1


def test_the_gate_runs_once_per_turn_and_again_for_the_next_question():
    backend = ScriptedBackend(eiffel)
    retriever = ListRetriever(queries=[])
    model = chat(search_call(), AIMessage("France"), AIMessage("Paris"))
    agent = agent_with(model, retriever, backend)
    state = agent.invoke({"messages": [("user", QUESTION)]})
    # unsure: the model's own search runs too, and its second call still sees the kept passage
    assert retriever.queries == ["Eiffel Tower stands", "Eiffel Tower"]
    assert all("text of p2" in seen[0].content for seen in model.seen)
    calls = len(backend.prompts)
    state = agent.invoke({"messages": [*state["messages"], ("user", "And its capital city?")]})
    assert len(backend.prompts) > calls and state["seakr_decision"]["query"] == "And its capital city?"


def test_a_plain_retriever_works_without_a_tool_and_a_gate_without_a_retriever():
    retriever = ListRetriever(queries=[])
    middleware = SeaKRMiddleware(llm=ScriptedBackend(eiffel), config=CONFIG, retriever=retriever, one_shot=True)
    state = create_agent(chat(AIMessage("France")), middleware=[middleware]).invoke({"messages": [("user", QUESTION)]})
    assert state["seakr_passages"][0]["id"] == "p2" and retriever.queries == ["Eiffel Tower stands"]
    alone = SeaKRMiddleware(llm=ScriptedBackend(eiffel), config=CONFIG, one_shot=True)
    state = create_agent(chat(AIMessage("France")), middleware=[alone]).invoke({"messages": [("user", QUESTION)]})
    assert state["seakr_decision"]["retrieve"] and state["seakr_passages"] == []


async def test_the_async_agent_decides_the_same():
    retriever = ListRetriever(queries=[])
    state = await agent_with(chat(AIMessage("France")), retriever, ScriptedBackend(eiffel)).ainvoke(
        {"messages": [("user", QUESTION)]}
    )
    assert state["seakr_passages"][0]["id"] == "p2"


def test_a_text_tool_gives_one_candidate_per_block():
    gate = AgentGate(
        llm=ScriptedBackend(eiffel),
        config=CONFIG,
        retriever=create_retriever_tool(ListRetriever(queries=[]), "search", "Search passages."),
    )
    decision = gate.decide(QUESTION)
    assert [d.page_content for d in decision.documents] == ["text of p2"] and gate.tool_names == {"search"}


def test_the_gate_tool_says_sure_or_unsure():
    events = Events()
    unsure = seakr_gate_tool(llm=ScriptedBackend(eiffel), config=CONFIG)
    assert unsure.name == "am_i_sure" and set(unsure.args) == {"question"}
    message = unsure.invoke(
        {"name": "am_i_sure", "args": {"question": QUESTION}, "id": "c1", "type": "tool_call"},
        config={"callbacks": [events]},
    )
    assert message.content.startswith("unsure: uncertainty") and message.artifact["reason"] == "uncertain"
    assert [n for n, _ in events.custom] == ["seakr_gate_decided"]
    assert seakr_gate_tool(llm=ScriptedBackend(sure), config=CONFIG).invoke({"question": QUESTION}).startswith("sure")


def test_settings_are_checked():
    with pytest.raises(ValueError, match="passages"):
        SeaKRMiddleware(llm=ScriptedBackend(sure), retriever=ListRetriever(), context_template="no slot")
    with pytest.raises(TypeError, match="either settings"):
        SeaKRMiddleware(AgentGate(llm=ScriptedBackend(sure)), skip_tool_when_sure=False)
    with pytest.raises(TypeError, match="skip_tool_when_sure is a setting of the one-shot gate: pass one_shot=True"):
        SeaKRMiddleware(llm=ScriptedBackend(sure), retriever=ListRetriever(), skip_tool_when_sure=False)
    with pytest.raises(ValueError, match="retriever"):
        SeaKRMiddleware(llm=ScriptedBackend(sure))  # the loop needs something to search
    with pytest.raises(ValueError, match="one_shot=True"):
        SeaKRMiddleware(llm=ScriptedBackend(sure), retriever=ListRetriever(), config=CONFIG.with_(mode="single_hop"))
    with pytest.raises(ValueError, match="empty"):
        AgentGate(llm=ScriptedBackend(sure), config=CONFIG).decide(" ")
    gate = SeaKRMiddleware(llm=ScriptedBackend(sure), retriever_tool="lookup", one_shot=True).settings
    assert isinstance(gate, AgentGate) and gate.tool_names == {"lookup"}
    assert DOCS[0].id == "p1"


# ------------------------------------------------------------------------------------------------ the loop
def test_the_loop_keeps_what_the_chain_would_and_the_agents_model_answers_with_it():
    retriever = ListRetriever(queries=[])
    model = chat(AIMessage("France"))
    events = Events()
    state = agent_with(model, retriever, ScriptedBackend(eiffel), one_shot=False).invoke(
        {"messages": [("user", QUESTION)]}, config={"callbacks": [events]}
    )
    gathered = state["seakr_gathered"]
    assert state["seakr_decision"] is None and gathered["stop_reason"] == "answer found"
    assert [s["decision"] for s in gathered["steps"]] == ["retrieve", "answer"]
    assert retriever.queries == ["Eiffel Tower stands"] and gathered["searches"] == 1
    (kept,) = state["seakr_passages"]
    assert kept["id"] == "p2" and kept["metadata"]["seakr_round"] == 1 and kept["metadata"]["source"] == "wiki"
    system = model.seen[0][0]
    assert system.content.startswith("Answer briefly.") and "text of p2" in system.content
    assert state["messages"][-1].content == "France"
    names = [n for n, _ in events.custom]
    assert names[:4] == [
        "seakr_step_assessed",
        "seakr_passages_retrieved",
        "seakr_passages_reranked",
        "seakr_step_finished",
    ]
    assert names[-1] == "seakr_knowledge_gathered" and "seakr_answer_chosen" not in names  # the agent answers


def test_the_loop_runs_once_per_turn_and_leaves_the_agents_tool_calls_alone():
    backend = ScriptedBackend(eiffel)
    retriever = ListRetriever(queries=[])
    model = chat(search_call(), AIMessage("France"), AIMessage("Paris"))
    agent = agent_with(model, retriever, backend, one_shot=False)
    state = agent.invoke({"messages": [("user", QUESTION)]})
    # the agent's own tool call runs (the loop leaves it alone) and SeaKR does not run again after it
    assert retriever.queries == ["Eiffel Tower stands", "Eiffel Tower"]
    assert all("text of p2" in seen[0].content for seen in model.seen)
    calls = len(backend.prompts)
    state = agent.invoke({"messages": [*state["messages"], ("user", "And its capital city?")]})
    assert len(backend.prompts) > calls and state["seakr_gathered"]["question"] == "And its capital city?"


async def test_the_async_agent_runs_the_same_loop():
    retriever = ListRetriever(queries=[])
    state = await agent_with(chat(AIMessage("France")), retriever, ScriptedBackend(eiffel), one_shot=False).ainvoke(
        {"messages": [("user", QUESTION)]}
    )
    assert state["seakr_passages"][0]["id"] == "p2" and state["seakr_gathered"]["lm_calls"] > 0


def test_a_loop_over_a_text_tool_and_over_a_plain_retriever():
    tool = create_retriever_tool(ListRetriever(queries=[]), "search", "Search passages.")
    gathered, docs = AgentLoop(llm=ScriptedBackend(eiffel), config=CONFIG, retriever=tool).gather(QUESTION)
    assert [d.page_content for d in docs] == ["text of p2"] and gathered.searches == 1
    gathered, docs = AgentLoop(llm=ScriptedBackend(eiffel), config=CONFIG, retriever=ListRetriever()).gather(QUESTION)
    assert [d.id for d in docs] == ["p2"]
    with pytest.raises(TypeError, match="retriever must be a LangChain BaseRetriever or the agent's retriever tool"):
        AgentLoop(llm=ScriptedBackend(eiffel), retriever="index")
