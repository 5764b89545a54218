"""How much sampling work one ``seakr serve`` takes on at once, since vLLM queues without a bound
(docs/design/backends.md)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Overloaded(RuntimeError):
    """The server holds as many samples as its cap allows; ``retry_after`` is the wait to suggest, in seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SampleBudget:
    """A cap on the sequences (prompts x (k + 1)) in flight, shared by every request of one server: past it a request
    waits up to ``queue_seconds`` (0: none), then gets ``Overloaded`` (HTTP 503 with ``Retry-After``)."""

    def __init__(self, cap: int, queue_seconds: float) -> None:
        if cap < 1:
            raise ValueError(f"SEAKR_SERVE_MAX_SAMPLES_IN_FLIGHT={cap}: must be at least 1")
        if not 0 <= queue_seconds < math.inf:
            raise ValueError(f"SEAKR_SERVE_QUEUE_SECONDS={queue_seconds}: must be a finite number of seconds >= 0")
        self.cap = cap
        self.queue_seconds = queue_seconds
        self.in_flight = 0
        self._room = asyncio.Condition()

    def _fits(self, sequences: int) -> bool:
        return self.in_flight + sequences <= self.cap or self.in_flight == 0  # a large request runs alone

    @asynccontextmanager
    async def admit(self, sequences: int) -> AsyncIterator[None]:
        """Hold ``sequences`` of the budget while the block runs; wait for room, or raise ``Overloaded``."""
        async with self._room:
            if not self._fits(sequences):
                try:
                    if not self.queue_seconds:
                        raise TimeoutError
                    await asyncio.wait_for(self._room.wait_for(lambda: self._fits(sequences)), self.queue_seconds)
                except TimeoutError:
                    raise Overloaded(
                        f"the server is at its cap of {self.cap} samples in flight ({self.in_flight} now) and had no "
                        f"room for {sequences} more within {self.queue_seconds:g} s; retry later",
                        retry_after=max(1, math.ceil(self.queue_seconds)),
                    ) from None
            self.in_flight += sequences
        try:
            yield
        finally:
            async with self._room:
                self.in_flight -= sequences
                self._room.notify_all()
