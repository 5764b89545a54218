"""``SeaKRMiddleware``: SeaKR's self-aware retrieval inside a LangChain v1 agent (``langchain.agents.create_agent``).

An agent retrieves when its model decides to call a retriever tool, and models call tools by habit: they search
for what they know and answer from memory what they do not.  The middleware puts SeaKR's gate in front of that
habit.  Once per turn, before the model's first call, the self-aware model writes its next step for the user's
question and its uncertainty is measured (the core's gate, the same ``GateDecision`` as everywhere):

* unsure: SeaKR's masked query is searched, the passage after which the model is surest is kept (the core's
  re-ranking) and appended to the system message of every model call of the turn;
* sure: nothing is retrieved and, with ``skip_tool_when_sure``, a retriever-tool call the model asks for is
  answered with a note instead of a search.

The decision and the kept passage are in the agent's state (``SeaKRAgentState``) and go to the callbacks as
``seakr_passages_retrieved``, ``seakr_passages_reranked`` and ``seakr_gate_decided`` events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables.config import ensure_config, get_callback_manager_for_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from langchain_seakr.agent_gate import AgentGate
from langchain_seakr.agent_state import SeaKRAgentState, document_from_state, document_to_state
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.decisions import GateDecision

__all__ = ["SeaKRMiddleware"]


class SeaKRMiddleware(AgentMiddleware[SeaKRAgentState[Any], Any, Any]):
    """Retrieve for an agent's turn only when the model is unsure, and keep the passage that makes it surest.

    Args:
        gate: The settings as an ``AgentGate``; or leave it out and pass its fields as keywords: ``llm``,
            ``config``, ``retriever``, ``retriever_tool``, ``skip_tool_when_sure``, ``context_template``,
            ``search_timeout``, ``on_retrieval_error``.

    Raises:
        TypeError: An unknown keyword (the error names the nearest one), or ``gate`` is not an ``AgentGate``.
        ValueError: A bad setting, or settings that contradict each other (``AgentGate`` says which).

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_core.tools import create_retriever_tool
        from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRMiddleware

        retriever = PassageIndexRetriever.demo(k=3)
        search = create_retriever_tool(retriever, "search", "Search Wikipedia passages.")
        agent = create_agent(
            "openai:gpt-5-mini",
            tools=[search],
            middleware=[SeaKRMiddleware(llm=ChatSeaKR(model="smollm2"), retriever=search)],
        )
        state = agent.invoke({"messages": [("user", "Who directed Santa Sangre?")]})
        print(state["seakr_decision"]["explanation"], state["seakr_passages"])
        ```
    """

    state_schema = SeaKRAgentState

    def __init__(self, gate: AgentGate | None = None, **settings: Any) -> None:
        super().__init__()
        check_keywords("SeaKRMiddleware", settings, accepted_keywords(AgentGate), config=True)
        if gate is not None and settings:
            raise TypeError("pass either gate= or its settings as keywords, not both")
        if gate is not None and not isinstance(gate, AgentGate):
            raise TypeError(f"gate must be an AgentGate (or pass its settings as keywords), got {type(gate).__name__}")
        self.gate = gate if gate is not None else AgentGate(**settings)
        """The settings and the gate they run."""
        self.tools = []

    # ------------------------------------------------------------------------------------------- the gate
    def before_model(self, state: SeaKRAgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Decide once per turn, before its first model call: the decision and the kept passage go to the state.

        Raises:
            ValueError: ``state`` has no ``messages`` (an agent's state always has them).
        """
        messages = _messages(state)
        turn = _last_human(messages)
        if turn is None or state.get("seakr_turn") == _turn_id(turn, messages):
            return None
        callbacks = get_callback_manager_for_config(ensure_config())
        decision = self.gate.decide(turn.text, callbacks=callbacks)
        return {
            "seakr_turn": _turn_id(turn, messages),
            "seakr_decision": decision.to_dict(),
            "seakr_passages": [document_to_state(d) for d in decision.documents],
        }

    async def abefore_model(self, state: SeaKRAgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """``before_model`` on a worker thread (the self-aware calls block), with the run's context."""
        return await asyncio.to_thread(self.before_model, state, runtime)

    # ------------------------------------------------------------------------------ the passage in context
    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        """Show the kept passage to the model: appended to the system message of each call of the turn."""
        return handler(self._with_passages(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any]:
        return await handler(self._with_passages(request))

    def _with_passages(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        stored = request.state.get("seakr_passages") or []
        if not stored:
            return request
        docs = [document_from_state(d) for d in stored]
        shown = "\n\n".join(f"{d.metadata.get('title') or ''}: {d.page_content}".lstrip(": ") for d in docs)
        context = self.gate.context_template.format(passages=shown)
        system = request.system_message
        text = f"{system.text}\n\n{context}" if system is not None and system.text.strip() else context
        return request.override(system_message=SystemMessage(content=text))

    # ------------------------------------------------------------------------- the model's own tool calls
    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        """With ``skip_tool_when_sure``: a retriever-tool call made while the model is sure gets a note instead."""
        skipped = self._skipped(request)
        return skipped if skipped is not None else handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        skipped = self._skipped(request)
        return skipped if skipped is not None else await handler(request)

    def _skipped(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if not self.gate.skip_tool_when_sure or call["name"] not in self.gate.tool_names:
            return None
        stored = (request.state or {}).get("seakr_decision") if isinstance(request.state, dict) else None
        if not stored:
            return None
        decision = GateDecision.from_dict(stored)
        if decision.retrieve:
            return None
        return ToolMessage(
            content=f"Not searched: {decision.explanation}. Answer from what you know.",
            tool_call_id=call["id"],
            name=call["name"],
            artifact={"seakr_decision": stored},
        )


def _messages(state: Any) -> list[AnyMessage]:
    """The state's messages, or a ``ValueError`` saying what the middleware reads and where it runs."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if not isinstance(messages, list):
        got = f"keys {sorted(state)}" if isinstance(state, Mapping) else type(state).__name__
        raise ValueError(
            f"SeaKRMiddleware reads the user's question from the agent state's 'messages', and this state has none "
            f"({got}): run it in create_agent(model, middleware=[...]), or pass a state such as "
            "{'messages': [HumanMessage('...')]}"
        )
    return messages


def _last_human(messages: list[AnyMessage]) -> HumanMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)


def _turn_id(message: HumanMessage, messages: list[AnyMessage]) -> str:
    """The human message's id (``add_messages`` gives every message one), else its position."""
    return str(message.id) if message.id else f"#{messages.index(message)}"
