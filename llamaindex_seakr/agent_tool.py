"""SeaKR for LlamaIndex agents (``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow``): its retrieval loop as the
tool an agent searches with, its decisions streamed with the agent's own events.

An agent searches when its model calls a tool, once per call, for the words the model chose.  ``seakr_search_tool``
gives the agent SeaKR's whole retrieval loop behind one call: the self-aware model writes a step, searches when it
is unsure or when the step names what no passage backs, keeps the passage after which it is surest, and goes on
until it has the answer or its passage limit (``SeaKR.gather``: the steps, gate, query, re-ranking, rules and stops
of ``SeaKRQueryEngine``, without its final answer); the agent's model reads the passages kept and answers.  Inside
an ``AgentWorkflow`` each phase is written to the run's event stream (``StepAssessedEvent`` ...
``KnowledgeGatheredEvent``), next to the agent's ``AgentStream`` and ``ToolCallResult``.

For SeaKR's own answer as a tool, ``SeaKRQueryEngine.as_tool()`` gives a ``QueryEngineTool``.
"""

# no ``from __future__ import annotations``: FunctionTool finds the ``Context`` parameter by its annotation object
from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from llamaindex_seakr._seakr import SeaKRComponent, checked_question, loop_inputs, run_question
from llamaindex_seakr.llm import SeaKRLLM
from llamaindex_seakr.observer import NodeTracker
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, RetrievalErrorPolicy
from seakr_integrations.reasoning.config import SETTING_NAMES, SeaKRConfig
from seakr_integrations.reasoning.events import KnowledgeGathered
from seakr_integrations.reasoning.gathered import GatheredKnowledge

__all__ = ["SEARCH_TOOL_DESCRIPTION", "SeaKRSearch", "seakr_search_tool"]

SEARCH_TOOL_DESCRIPTION = (
    "Finds the passages needed to answer a question, searching as many times as it takes: it reasons step by step, "
    "searches whenever it is unsure or a step names something no passage covers yet, and returns the passages it "
    "kept. Call it with the user's whole question, then answer from the passages."
)
"""What the agent's model reads about the tool (``seakr_search_tool(description=...)`` replaces it)."""

NO_PASSAGES = "No passage was found for this question; answer from what you know, or say you do not know."
"""The tool's text when the loop kept nothing."""


class SeaKRSearch(SeaKRComponent):
    """The function behind ``seakr_search_tool``: SeaKR's loop over ``retriever`` with ``llm``, one question per
    call, its phases written to the calling workflow's stream.

    Args:
        retriever: Any LlamaIndex retriever, or a core retriever such as ``BM25Index``.
        llm: The self-aware model (``SeaKRLLM``, or a ``SelfAwareBackend``; a ``SeaKRLLM`` with ``base_url=`` asks
            a ``seakr serve`` server).
        config: SeaKR's settings and rules (multi-hop): the loop samples as ``llm`` does, except where ``config``
            changes a setting from its default.
        search_timeout, on_retrieval_error: As for ``SeaKRQueryEngine``.
    """

    def __init__(
        self,
        retriever: Any,
        llm: SeaKRLLM | Any,
        config: SeaKRConfig | None = None,
        *,
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
        on_retrieval_error: RetrievalErrorPolicy = "raise",
    ) -> None:
        self.llm, self.retriever, self._seakr_loop = loop_inputs(
            "seakr_search_tool", llm, retriever, config, search_timeout, on_retrieval_error
        )
        if config is not None and config.mode != "multi_hop":
            raise ValueError(
                f"config.mode={config.mode!r}: the search tool runs SeaKR's multi-hop loop; for one retrieval "
                "decision per search use UncertaintyGatedRetriever in a RetrieverTool"
            )

    async def __call__(self, question: str, ctx: Context | None = None) -> str:
        """Gather the passages for ``question``; with ``ctx`` (a running workflow's), each phase goes to its event
        stream as it completes.

        Returns:
            The passages kept (``title: text``, blank lines between), or a note that none was found.

        Raises:
            ValueError: Empty question.  ``RetrievalError``: the retriever failed (``on_retrieval_error="raise"``).
        """
        gathered, _ = await self.gather(question, ctx)
        if not gathered.passages:
            return NO_PASSAGES
        return "\n\n".join(f"{p.title}: {p.text}" if p.title else p.text for p in gathered.passages)

    async def gather(self, question: str, ctx: Context | None = None) -> tuple[GatheredKnowledge, NodeTracker]:
        """The loop's record for ``question`` and the tracker that maps its passages to the retriever's nodes
        (``tracker.node(passage)``); with ``ctx``, each phase is written to its stream."""
        question = checked_question(question, "the question is empty: call the tool with the user's whole question")
        gathered, tracker = await run_question(
            lambda questions, observers: self.seakr.gather_events(questions, observers=observers),
            question,
            KnowledgeGathered,
            ctx,
            thread_name="seakr-agent-tool",
        )
        return gathered.gathered, tracker


def seakr_search_tool(
    retriever: Any,
    llm: SeaKRLLM | Any,
    config: SeaKRConfig | None = None,
    *,
    name: str = "seakr_search",
    description: str = SEARCH_TOOL_DESCRIPTION,
    **settings: Any,
) -> FunctionTool:
    """SeaKR's retrieval loop as a ``FunctionTool`` for a LlamaIndex agent (``SeaKRSearch`` runs it; ``settings``:
    its ``search_timeout`` and ``on_retrieval_error``).

    Example:
        ```python
        from llama_index.core.agent.workflow import FunctionAgent
        from llama_index.llms.openai_like import OpenAILike
        from llamaindex_seakr import PassageRetriever, SeaKRLLM, seakr_search_tool
        from seakr_integrations.demo import demo_index

        served = {"api_base": "http://127.0.0.1:8000/v1", "api_key": "EMPTY"}
        tool = seakr_search_tool(PassageRetriever(demo_index(), top_k=3), SeaKRLLM(base_url="http://127.0.0.1:8000"))
        agent = FunctionAgent(tools=[tool], llm=OpenAILike(model="qwen2.5-coder-0.5b-instruct", **served,
                              is_chat_model=True, is_function_calling_model=True))
        handler = agent.run("The author of Sexual Politics attended which British University?")
        ```
    """
    check_keywords(
        "seakr_search_tool",
        settings,
        accepted_keywords(SeaKRSearch) - {"retriever", "llm", "config"},
        config_settings=SETTING_NAMES,
    )
    search = SeaKRSearch(retriever, llm, config, **settings)

    async def seakr_search(ctx: Context, question: str) -> str:
        return await search(question, ctx)

    return FunctionTool.from_defaults(async_fn=seakr_search, name=name, description=description)
