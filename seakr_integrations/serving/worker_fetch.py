"""Fetching what the read-out hook kept, for many concurrent requests in one ``collective_rpc``; each handler still
gets exactly its own values (docs/design/backends.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from prometheus_client import Counter

from seakr_integrations.backends.vllm_worker import unpack_popped

READ_OUTS = Counter("seakr_read_outs", "Read-out vectors seakr serve fetched from vLLM's workers.")
ROUND_TRIPS = Counter("seakr_worker_round_trips", "collective_rpc calls seakr serve made to fetch read-out values.")

_JOIN_ROUNDS = 2
"""Event-loop rounds a scheduled fetch waits, so that handlers woken by the same engine output join it."""


class WorkerFetch:
    """Pops read-out vectors and greedy logsumexps from the workers (``SeaKRWorkerExtension``) of vLLM's
    ``EngineClient``, batched across concurrent handlers."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.round_trips = 0
        """``collective_rpc`` calls made so far (read by the serving benchmark and the tests)."""
        self._vectors: dict[str, asyncio.Future] = {}
        self._lse: dict[str, asyncio.Future] = {}
        self._scheduled: asyncio.Task | None = None

    async def vector(self, readout_id: str) -> np.ndarray:
        """The hidden state the hook kept for one finished read-out request."""
        return await self._wait(self._vectors, readout_id)

    async def logsumexp(self, greedy_id: str) -> dict[int, float]:
        """The raw-logit logsumexp of each generated position of one finished greedy request."""
        return await self._wait(self._lse, greedy_id)

    async def _wait(self, pending: dict[str, asyncio.Future], key: str) -> Any:
        future = asyncio.get_running_loop().create_future()
        pending[key] = future
        if self._scheduled is None:
            self._scheduled = asyncio.ensure_future(self._fetch())
        return await future

    async def _fetch(self) -> None:
        for _ in range(_JOIN_ROUNDS):
            await asyncio.sleep(0)
        vectors, lse, self._vectors, self._lse, self._scheduled = self._vectors, self._lse, {}, {}, None
        self.round_trips += 1
        ROUND_TRIPS.inc()
        READ_OUTS.inc(len(vectors))
        try:
            (popped, *_) = await self.engine.collective_rpc("seakr_pop_vectors", args=(list(vectors), list(lse)))
            got_vectors, got_lse = unpack_popped(popped)
        except BaseException as exc:
            for future in (*vectors.values(), *lse.values()):
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else RuntimeError("the fetch was cancelled"))
            if not isinstance(exc, Exception):
                raise
            return
        for key, future in vectors.items():
            if future.done():
                continue
            if key in got_vectors:
                future.set_result(got_vectors[key])
            else:
                future.set_exception(
                    RuntimeError("the worker kept no hidden state for a read-out; the capture hook missed it")
                )
        for key, future in lse.items():
            if not future.done():
                future.set_result(got_lse.get(key, {}))
