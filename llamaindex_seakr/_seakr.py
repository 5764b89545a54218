"""What every LlamaIndex component built on the SeaKR loop shares: how it takes its model, retriever and settings,
the ``SeaKR`` it builds from them, and how it runs one question in a worker thread with its phases as events.

LangChain's components share one pydantic base (``langchain_seakr._seakr.SeaKRComponent``).  LlamaIndex's derive
from bases of several kinds (``CustomQueryEngine`` and ``BaseNodePostprocessor`` are pydantic models, ``BaseRetriever``
and ``Workflow`` are not, the agent tool's function is a plain class), so here the base is a plain mixin,
``SeaKRComponent``, over what each component keeps: its ``llm`` (a field or an attribute, so that assigning another
model is followed) and one ``ComponentLoop`` (the settings and search it was given, checked at construction).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.workflow import Context

from llamaindex_seakr.events import phase_event
from llamaindex_seakr.llm import SeaKRLLM
from llamaindex_seakr.nodes import NodeSearch, as_llama_retriever
from llamaindex_seakr.observer import NodeTracker
from llamaindex_seakr.threads import iterate_in_thread
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.reasoning.calls import RetrievalErrorPolicy, check_search_settings
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.events import Observer, SeaKREvent
from seakr_integrations.reasoning.reasoner import SeaKR
from seakr_integrations.self_aware_model import LoopCache

__all__ = [
    "ComponentLoop",
    "SeaKRComponent",
    "as_seakr_llm",
    "checked_config",
    "checked_question",
    "loop_inputs",
    "run_question",
]

Outcome = TypeVar("Outcome", bound=SeaKREvent)


def as_seakr_llm(llm: Any, what: str) -> SeaKRLLM:
    """``llm`` as a ``SeaKRLLM`` (a bare ``SelfAwareBackend`` is wrapped), or a ``TypeError`` naming ``what`` needs it.

    The SeaKR components measure uncertainty from hidden states, so they fail at construction, not at the first
    query, when given an LLM that has none.
    """
    if isinstance(llm, SeaKRLLM):
        return llm
    if isinstance(llm, SelfAwareBackend):
        return SeaKRLLM(backend=llm)
    raise TypeError(
        f"{what} needs a self-aware LLM (SeaKRLLM, or a SelfAwareBackend such as HFBackend) that exposes hidden "
        f"states; got {type(llm).__name__}. Wrap a local model: SeaKRLLM(backend='hf', model='smollm2')"
    )


def checked_config(config: Any) -> SeaKRConfig | None:
    """``config`` when it is a ``SeaKRConfig`` or ``None`` (the LLM's sampling and SeaKR's defaults), else a
    ``TypeError``."""
    if config is not None and not isinstance(config, SeaKRConfig):
        raise TypeError(f"config must be a SeaKRConfig, got {type(config).__name__}")
    return config


def checked_question(question: Any, message: str) -> str:
    """``question`` without its surrounding blanks, or ``ValueError(message)`` when it is no text or only blanks
    (each component says in ``message`` what it needs the question for)."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError(message)
    return question.strip()


class ComponentLoop:
    """What a component's ``SeaKR`` is built from besides the model, checked once: the config as given, the search
    (the component's retriever as a core ``Retriever``; ``None`` for a gate or a re-ranker, whose loop never
    searches) with its settings, and the cache that keeps the ``SeaKR`` while the model and all these stay the same.

    Raises:
        TypeError: ``config`` is no ``SeaKRConfig``.
    """

    def __init__(self, config: Any = None, search: NodeSearch | None = None, **search_settings: Any) -> None:
        self.given = checked_config(config)
        self.search = search
        self.search_settings = search_settings
        """``search_timeout`` and ``on_retrieval_error`` for the loop's searches (checked, or none given)."""
        self._loops = LoopCache()

    def config(self, llm: SeaKRLLM) -> SeaKRConfig:
        """The settings the loop runs with: ``llm``'s sampling, with the given config's changes on top."""
        return llm.loop_config(self.given)

    def seakr(self, llm: SeaKRLLM) -> SeaKR:
        """The core loop over ``llm``'s back-end, this search and these settings (built on first use,
        ``LoopCache``)."""
        return self._loops.get(llm.backend, self.search, self.config(llm), **self.search_settings)


def loop_inputs(
    owner: str,
    llm: Any,
    retriever: Any,
    config: Any,
    search_timeout: float | None,
    on_retrieval_error: RetrievalErrorPolicy,
) -> tuple[SeaKRLLM, BaseRetriever, ComponentLoop]:
    """The checked inputs of a component whose loop searches ``retriever`` (the query engine, the workflow, the
    agent tool): the model, the LlamaIndex retriever and the loop over them.

    Raises:
        TypeError: ``llm`` is not self-aware, ``retriever`` is not a retriever or ``config`` no ``SeaKRConfig``
            (the message names ``owner``).
        ValueError: A bad ``search_timeout`` or ``on_retrieval_error``.
    """
    llm = as_seakr_llm(llm, owner)
    retriever = as_llama_retriever(retriever, owner)
    config = checked_config(config)
    timeout, policy = check_search_settings(search_timeout, on_retrieval_error)
    loop = ComponentLoop(config, NodeSearch(retriever), search_timeout=timeout, on_retrieval_error=policy)
    return llm, retriever, loop


class SeaKRComponent:
    """The base of every LlamaIndex component that drives SeaKR's loop (query engine, workflow, agent tool, gated
    retriever, re-ranker): its settings and its ``SeaKR``, from its ``llm`` and its ``ComponentLoop``.

    A subclass sets ``llm`` (a ``SeaKRLLM``: a pydantic field or a plain attribute) and ``_seakr_loop`` (a pydantic
    ``PrivateAttr`` or a plain attribute) at construction.  The loop samples as ``llm`` does (``k``, temperature,
    ``max_tokens``, layer, estimator, chat template...), unless the config given changes a setting from its default:
    the rule of every SeaKR component in both packages (``SelfAwareModel.loop_config``).
    """

    if TYPE_CHECKING:
        llm: SeaKRLLM
        _seakr_loop: ComponentLoop

    @property
    def given_config(self) -> SeaKRConfig | None:
        """The config as given (``config`` is what the loop runs with)."""
        return self._seakr_loop.given

    @property
    def config(self) -> SeaKRConfig:
        """The settings the loop runs with: the LLM's sampling, with the given config's changes on top."""
        return self._seakr_loop.config(self.llm)

    @property
    def seakr(self) -> SeaKR:
        """The core SeaKR object this component drives (built on first use, kept while the model, the search and
        the settings stay the same: ``LoopCache``)."""
        return self._seakr_loop.seakr(self.llm)


async def run_question(
    events: Callable[[list[str], Sequence[Observer]], Iterator[SeaKREvent]],
    question: str,
    outcome: type[Outcome],
    ctx: Context | None = None,
    *,
    thread_name: str,
) -> tuple[Outcome, NodeTracker]:
    """Run ``events([question], observers)`` (``SeaKR.iter_events`` or ``gather_events``) in a worker thread, write
    each phase to ``ctx``'s stream as it completes (``phase_event``), and return the question's ``outcome`` event
    with the tracker that maps its passages to the retriever's nodes.

    ``events`` is called in the worker thread, so the loop is built there too, not in the event loop.

    Raises:
        Whatever the loop raises (the phase ``QuestionFailedEvent`` is written first).
    """
    tracker = NodeTracker()
    found: Outcome | None = None

    def start(stop: threading.Event) -> Iterator[SeaKREvent]:
        tracker.stop = stop
        return events([question], [tracker])

    # aclosing: if streaming fails, the loop's thread is told to stop at once, not when the generator is collected
    async with aclosing(iterate_in_thread(start, name=thread_name)) as stream:
        async for core_event in stream:
            if isinstance(core_event, outcome):
                found = core_event
            phase = phase_event(core_event, tracker)
            if ctx is not None and phase is not None:
                ctx.write_event_to_stream(phase)
    if found is None:  # pragma: no cover - the loop always ends a question with its outcome event
        raise RuntimeError(f"the SeaKR loop ended without its {outcome.__name__} event for {question!r}")
    return found, tracker
