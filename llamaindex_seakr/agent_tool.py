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
from contextlib import aclosing
from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from llamaindex_seakr.llm import SeaKRLLM, as_seakr_llm
from llamaindex_seakr.nodes import NodeSearch, as_llama_retriever
from llamaindex_seakr.observer import NodeTracker
from llamaindex_seakr.threads import iterate_in_thread
from llamaindex_seakr.workflow import SeaKRWorkflow
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, RetrievalErrorPolicy, check_search_settings
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.events import KnowledgeGathered
from seakr_integrations.reasoning.gathered import GatheredKnowledge
from seakr_integrations.reasoning.reasoner import SeaKR
from seakr_integrations.self_aware_model import LoopCache

__all__ = ["SEARCH_TOOL_DESCRIPTION", "SeaKRSearch", "seakr_search_tool"]

SEARCH_TOOL_DESCRIPTION = (
    "Finds the passages needed to answer a question, searching as many times as it takes: it reasons step by step, "
    "searches whenever it is unsure or a step names something no passage covers yet, and returns the passages it "
    "kept. Call it with the user's whole question, then answer from the passages."
)
"""What the agent's model reads about the tool (``seakr_search_tool(description=...)`` replaces it)."""

NO_PASSAGES = "No passage was found for this question; answer from what you know, or say you do not know."
"""The tool's text when the loop kept nothing."""


class SeaKRSearch:
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
        self.llm = as_seakr_llm(llm, "seakr_search_tool")
        self.retriever = as_llama_retriever(retriever, "seakr_search_tool")
        if config is not None and not isinstance(config, SeaKRConfig):
            raise TypeError(f"config must be a SeaKRConfig, got {type(config).__name__}")
        if config is not None and config.mode != "multi_hop":
            raise ValueError(
                f"config.mode={config.mode!r}: the search tool runs SeaKR's multi-hop loop; for one retrieval "
                "decision per search use UncertaintyGatedRetriever in a RetrieverTool"
            )
        self.given_config = config
        timeout, policy = check_search_settings(search_timeout, on_retrieval_error)
        self._search_settings = {"search_timeout": timeout, "on_retrieval_error": policy}
        self._search = NodeSearch(self.retriever)
        self._loops = LoopCache()

    @property
    def seakr(self) -> SeaKR:
        """The core SeaKR object each call drives (built on first use, ``LoopCache``)."""
        config = self.llm.loop_config(self.given_config)
        return self._loops.get(self.llm.backend, self._search, config, **self._search_settings)

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
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty: call the tool with the user's whole question")
        tracker = NodeTracker()
        gathered: GatheredKnowledge | None = None

        def events(stop: Any) -> Any:
            tracker.stop = stop
            return self.seakr.gather_events([question.strip()], observers=[tracker])

        async with aclosing(iterate_in_thread(events, name="seakr-agent-tool")) as stream:
            async for core_event in stream:
                if isinstance(core_event, KnowledgeGathered):
                    gathered = core_event.gathered
                phase = SeaKRWorkflow.translate(core_event, tracker)
                if ctx is not None and phase is not None:
                    ctx.write_event_to_stream(phase)
        if gathered is None:  # pragma: no cover - gather_events always ends a question with KnowledgeGathered
            raise RuntimeError(f"the SeaKR loop ended without its passages for {question!r}")
        return gathered, tracker


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
        "seakr_search_tool", settings, accepted_keywords(SeaKRSearch) - {"retriever", "llm", "config"}, config=True
    )
    search = SeaKRSearch(retriever, llm, config, **settings)

    async def seakr_search(ctx: Context, question: str) -> str:
        return await search(question, ctx)

    return FunctionTool.from_defaults(async_fn=seakr_search, name=name, description=description)
