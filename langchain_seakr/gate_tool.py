"""``seakr_gate_tool``: SeaKR's gate as a tool an agent can call to ask "am I sure?".

A middleware decides for the agent; some agents should decide for themselves, e.g. check a draft answer before
committing to it, or choose between answering and asking the user.  The tool runs the same gate as
``SeaKRMiddleware`` (the core's ``GateDecision``) on the text it is given and retrieves nothing: it answers in words
with the decision's explanation and gives the decision itself as the tool message's artifact.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.callbacks.manager import CallbackManager
from langchain_core.tools import BaseTool, StructuredTool

from langchain_seakr.agent_gate import AgentGate
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.config import SETTING_NAMES
from seakr_integrations.setting_conflicts import searches_nothing

__all__ = ["seakr_gate_tool"]

TOOL_SETTINGS = ("llm", "config")
"""The gate's settings the tool uses."""

DESCRIPTION = (
    "Check whether you know the answer to a question without looking it up. Input: the question. Output: whether "
    "you are sure or unsure, with your uncertainty; when unsure, search before answering."
)


def seakr_gate_tool(
    gate: AgentGate | None = None, *, name: str = "am_i_sure", description: str = DESCRIPTION, **settings: Any
) -> BaseTool:
    """A tool that measures the model's uncertainty about ``question`` with SeaKR's gate.

    Args:
        gate: The gate's settings (``llm``, ``config``); or leave it out and pass them as keywords.
        name: The tool's name, as the agent's model sees it.
        description: What the tool is for, as the agent's model reads it.
        **settings: ``llm`` and ``config``.  The tool searches nothing, so the middleware's search settings
            (``retriever``, ``search_timeout``...) are refused here rather than ignored.

    Returns:
        A ``StructuredTool`` taking ``question``; its reply says ``sure`` or ``unsure`` with the explanation, and
        with ``response_format="content_and_artifact"`` its artifact is ``GateDecision.to_dict()``.  The decision is
        also a ``seakr_gate_decided`` callback event.

    Example:
        ```python
        agent = create_agent(model, tools=[search, seakr_gate_tool(llm=ChatSeaKR(model="smollm2"))])
        ```
    """
    unused = sorted(set(settings) & (accepted_keywords(AgentGate) - set(TOOL_SETTINGS)))
    if unused:
        raise searches_nothing(
            "seakr_gate_tool (it tells the agent whether the model is sure; it takes llm= and config=)",
            unused[0],
            "SeaKRMiddleware",
        )
    check_keywords(
        "seakr_gate_tool", settings, (*TOOL_SETTINGS, "gate", "name", "description"), config_settings=SETTING_NAMES
    )
    if gate is not None and settings:
        raise TypeError("pass either gate= or its settings as keywords, not both")
    if gate is not None and not isinstance(gate, AgentGate):
        raise TypeError(f"gate must be an AgentGate (or pass its settings as keywords), got {type(gate).__name__}")
    checker = gate if gate is not None else AgentGate(**settings)

    def am_i_sure(question: str, callbacks: Callbacks = None) -> tuple[str, dict[str, Any]]:
        manager = CallbackManager.configure(callbacks) if callbacks is not None else None
        decision = checker.decide(question, callbacks=manager, retrieve=False)
        verdict = "unsure" if decision.retrieve else "sure"
        return f"{verdict}: {decision.explanation}", decision.to_dict()

    return StructuredTool.from_function(
        am_i_sure, name=name, description=description, response_format="content_and_artifact"
    )
