"""SeaKR's agent-facing methods: gather the passages its loop keeps without answering, for another model (an
agent's) to answer from.  A mixin of ``SeaKR`` (``reasoner``), so that ``SeaKR(...).gather(...)`` is the API and the
answering API keeps a module of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.driver import Answered, Driver, Failed
from seakr_integrations.reasoning.events import KnowledgeGathered, Observer, SeaKREvent
from seakr_integrations.reasoning.gathered import GatheredKnowledge
from seakr_integrations.reasoning.seakr_loop import SeaKRLoop
from seakr_integrations.reasoning.state import QuestionState
from seakr_integrations.retrieval.passage import Retriever

__all__ = ["Gathering"]


class Gathering:
    """``gather``, ``gather_many`` and ``gather_events`` of ``SeaKR``: its loop up to its end, without the final
    answer.  The class it is mixed into gives the members annotated here (``SeaKR`` does, through ``Reasoner``)."""

    backend: SelfAwareBackend
    retriever: Retriever | None
    config: SeaKRConfig
    loop: SeaKRLoop
    _states: Callable[..., tuple[list[QuestionState], list[tuple[QuestionState, ValueError]]]]

    def gather(self, question: str) -> GatheredKnowledge:
        """SeaKR's loop for ``question`` without its final answer: the passages it keeps, for another model (an
        agent's) to answer from (:meth:`gather_many`)."""
        return self.gather_many([question])[0]

    def gather_many(
        self,
        questions: Sequence[str],
        *,
        observers: Sequence[Observer | None] | None = None,
        max_in_flight: int = 32,
    ) -> list[GatheredKnowledge]:
        """The loop of :meth:`answer_many` up to its end, without the final answer, for each question: the same
        steps, gate, queries, re-ranking and stops (the config's rules), its events to ``observers``; results in
        order (the first failure raised once all have finished).

        Raises:
            ValueError: ``config.mode`` is ``"single_hop"`` (its one retrieval decision is the answer itself: use
                :meth:`assess` and :meth:`rerank`), no retriever, or a question that cannot be asked.
        """
        gathered: list[Any] = [None] * len(questions)  # a single string is refused by gather_events
        for event in self.gather_events(questions, observers=observers, max_in_flight=max_in_flight):
            if isinstance(event, KnowledgeGathered):
                gathered[event.question_index] = event.gathered
        return gathered

    def gather_events(
        self,
        questions: Sequence[str],
        *,
        observers: Sequence[Observer | None] | None = None,
        max_in_flight: int = 32,
    ) -> Iterator[SeaKREvent]:
        """:meth:`gather_many`, yielding every phase as it completes (``StepAssessed``, ``PassagesRetrieved``,
        ``PassagesReranked``, ``StepFinished``), each question ending with ``KnowledgeGathered``; the first failure
        is raised once the others have finished."""
        if self.config.mode != "multi_hop":
            raise ValueError(
                f"gather runs the multi-hop loop, and this config's mode is {self.config.mode!r}: pass "
                "SeaKRConfig(mode='multi_hop'), or use assess() and rerank() for a single retrieval decision"
            )
        if self.retriever is None:
            raise ValueError("this SeaKR has no retriever: pass one to SeaKR(backend, retriever) to gather passages")
        states, _ = self._states(questions, observers)
        failed: Exception | None = None
        for item in Driver(self.backend, self.retriever, max_in_flight).run((s, self.loop.gather(s)) for s in states):
            if isinstance(item, Failed):
                failed = failed or item.error
            elif not isinstance(item, Answered):
                yield item
        if failed is not None:
            raise failed
