"""The non-blocking path of a self-aware back-end: ``submit`` each prompt when it is issued, ``collect`` each output
when it is finished (docs/design/backends.md).  Implementations: ``base.BatchingStream``, ``vllm_stream.VLLMStream``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig

Finished = tuple[int, SelfAwareOutput | Exception]
"""A finished ticket: its output, or the exception that failed it (that prompt alone)."""


class GenerationStream(ABC):
    """Prompts in flight on one back-end, used by one driver thread (it is not thread-safe).  As a context manager,
    leaving the block (normally, by an error or by an interrupt) cancels whatever is still running."""

    @abstractmethod
    def submit(self, prompt: str, config: SamplingConfig) -> int:
        """Start generating ``prompt`` (a greedy continuation and ``config.k`` samples); returns its ticket.

        Raises:
            ValueError: The prompt is empty, does not fit the model's context with ``max_tokens``, or reads another
                layer or source than the prompts in flight.
        """

    @abstractmethod
    def collect(self) -> list[Finished]:
        """Make one unit of progress (blocking for at most one engine step, or one batch) and return the tickets
        finished since the last call (maybe none); returns at once when nothing is pending."""

    @property
    @abstractmethod
    def pending(self) -> int:
        """Tickets submitted and not yet collected."""

    @abstractmethod
    def cancel(self, tickets: Iterable[int] | None = None) -> None:
        """Stop generating these tickets (all when ``None``); they are never returned by ``collect``."""

    def close(self) -> None:
        """Cancel everything still in flight and release the back-end.  Safe to call twice."""
        self.cancel()

    def __enter__(self) -> GenerationStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
