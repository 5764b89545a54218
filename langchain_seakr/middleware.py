"""``SeaKRMiddleware``: SeaKR's self-aware retrieval inside a LangChain v1 agent (``langchain.agents.create_agent``).

An agent retrieves when its model decides to call a retriever tool, and models call tools by habit: they search
for what they know, answer from memory what they do not, and rarely search a second time for what the first
passage names.  The middleware runs SeaKR before the agent's model answers a turn:

* the loop (the default, ``AgentLoop``): SeaKR's own retrieval loop, from the core (``SeaKR.gather``, the steps,
  gate, query, re-ranking, rules and stops of ``SeaKRChain``): the self-aware model writes a step, searches when it
  is unsure or when the step names what no passage backs, keeps the passage after which it is surest, and goes on
  until it has the answer or its passage limit.  The passages kept are appended to the system message of every
  model call of the turn, and the agent's model answers.
* ``one_shot=True`` (``AgentGate``, for latency-bound apps): one assessment of the question; when unsure, one search
  and the surest passage kept; when sure, nothing retrieved and (``skip_tool_when_sure``) a retriever-tool call the
  model asks for answered with a note.

Both run in ``before_agent``: once per invocation (one user turn), before the model's first call.  ``before_model``
runs again after every tool call of the turn, and would repeat searches whose outcome the agent's own tool calls do
not change.  The decisions are in the agent's state (``SeaKRAgentState``: ``seakr_gathered`` for the loop,
``seakr_decision`` for the gate, ``seakr_passages`` for both) and go to the callbacks as custom events
(``seakr_step_assessed``, ``seakr_passages_retrieved``, ``seakr_passages_reranked``, ``seakr_step_finished``,
``seakr_knowledge_gathered``; the gate's ``seakr_gate_decided``).
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
from langchain_seakr.agent_loop import AgentLoop
from langchain_seakr.agent_state import SeaKRAgentState, document_from_state, document_to_state
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.config import SETTING_NAMES
from seakr_integrations.reasoning.decisions import GateDecision

__all__ = ["SeaKRMiddleware"]


class SeaKRMiddleware(AgentMiddleware[SeaKRAgentState[Any], Any, Any]):
    """Run SeaKR's retrieval loop for each agent turn, and show the agent's model the passages it kept.

    Args:
        settings: An ``AgentLoop`` (the loop) or an ``AgentGate`` (the one-shot gate); or leave it out and pass the
            fields as keywords: ``llm``, ``config``, ``retriever``, ``context_template``, ``search_timeout``,
            ``on_retrieval_error``; with ``one_shot=True`` the gate's, which add ``retriever_tool`` and
            ``skip_tool_when_sure``.
        one_shot: Keywords build an ``AgentGate`` (one assessment, at most one passage) instead of an
            ``AgentLoop``.

    Raises:
        TypeError: An unknown keyword (the error names the nearest one, or says it is the one-shot gate's), or
            ``settings`` is neither an ``AgentLoop`` nor an ``AgentGate``.
        ValueError: A bad setting, or settings that contradict each other (the settings class says which).

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_openai import ChatOpenAI
        from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRMiddleware

        served = {"base_url": "http://127.0.0.1:8000/v1", "api_key": "EMPTY"}
        agent = create_agent(
            ChatOpenAI(model="qwen2.5-coder-0.5b-instruct", **served),
            middleware=[SeaKRMiddleware(llm=ChatSeaKR(**served), retriever=PassageIndexRetriever.demo())],
        )
        question = "The author of Sexual Politics attended which British University?"
        state = agent.invoke({"messages": [("user", question)]})
        print(state["messages"][-1].text, [d["metadata"]["title"] for d in state["seakr_passages"]])
        ```
    """

    state_schema = SeaKRAgentState

    def __init__(self, settings: AgentLoop | AgentGate | None = None, *, one_shot: bool = False, **keywords: Any):
        super().__init__()
        kind = AgentGate if one_shot else AgentLoop
        if settings is not None and (keywords or one_shot):
            raise TypeError("pass either settings (an AgentLoop or AgentGate) or its fields as keywords, not both")
        if settings is not None and not isinstance(settings, (AgentLoop, AgentGate)):
            raise TypeError(
                f"settings must be an AgentLoop or an AgentGate (or pass their fields as keywords), got "
                f"{type(settings).__name__}"
            )
        if settings is None:
            gate_only = sorted(set(keywords) - set(accepted_keywords(AgentLoop)) & set(accepted_keywords(AgentGate)))
            if kind is AgentLoop and gate_only:
                raise TypeError(
                    f"{', '.join(gate_only)} {'is a setting' if len(gate_only) == 1 else 'are settings'} of the "
                    "one-shot gate: pass one_shot=True with it, or leave it out (the loop leaves the agent's tool "
                    "calls alone)"
                )
            check_keywords("SeaKRMiddleware", keywords, accepted_keywords(kind), config_settings=SETTING_NAMES)
            settings = kind(**keywords)
        self.settings: AgentLoop | AgentGate = settings
        """The settings, and the loop or gate they run."""
        self.tools = []

    # ------------------------------------------------------------------------------------ the loop or gate
    def before_agent(self, state: SeaKRAgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Once per turn, before the model's first call: the loop's (or gate's) record and the passages kept go to
        the state.

        Raises:
            ValueError: ``state`` has no ``messages`` (an agent's state always has them).
        """
        messages = _messages(state)
        turn = _last_human(messages)
        if turn is None or state.get("seakr_turn") == _turn_id(turn, messages):
            return None
        callbacks = get_callback_manager_for_config(ensure_config())
        update: dict[str, Any] = {"seakr_turn": _turn_id(turn, messages)}
        if isinstance(self.settings, AgentLoop):
            gathered, documents = self.settings.gather(turn.text, callbacks=callbacks)
            update |= {"seakr_gathered": gathered.to_dict(), "seakr_decision": None}
        else:
            decision = self.settings.decide(turn.text, callbacks=callbacks)
            documents = decision.documents
            update |= {"seakr_decision": decision.to_dict(), "seakr_gathered": None}
        return update | {"seakr_passages": [document_to_state(d) for d in documents]}

    async def abefore_agent(self, state: SeaKRAgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """``before_agent`` on a worker thread (the self-aware calls block), with the run's context."""
        return await asyncio.to_thread(self.before_agent, state, runtime)

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
        context = self.settings.context_template.format(passages=shown)
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
        gate = self.settings
        if not isinstance(gate, AgentGate) or not gate.skip_tool_when_sure or call["name"] not in gate.tool_names:
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
