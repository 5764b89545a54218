"""The server's fetch of read-out vectors: handlers woken by one engine step share one ``collective_rpc``, and each
gets exactly its own values back.  The worker side is the real ``SeaKRWorkerExtension.seakr_pop_vectors``; the
engine client is a stand-in that calls it as vLLM's ``collective_rpc`` would."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from seakr_integrations.backends.vllm_worker import SeaKRWorkerExtension
from seakr_integrations.serving.worker_fetch import WorkerFetch


class _Engine:
    def __init__(self, captured: dict[str, np.ndarray], lse: dict[str, dict[int, float]], fail: bool = False) -> None:
        self.worker = SeaKRWorkerExtension.__new__(SeaKRWorkerExtension)
        self.worker._seakr_captured, self.worker._seakr_lse, self.worker._seakr_fired = captured, lse, 0
        self.calls: list[tuple] = []
        self.fail = fail

    async def collective_rpc(self, method: str, args: tuple = ()) -> list:
        self.calls.append((method, args))
        await asyncio.sleep(0.01)
        if self.fail:
            raise RuntimeError("engine core died")
        return [getattr(self.worker, method)(*args)]


def _step(engine: _Engine, readouts: list[str], greedy: list[str]) -> tuple[WorkerFetch, list]:
    """Handlers that all wake on one engine output (an event), then ask for their own values."""

    async def run() -> tuple[WorkerFetch, list]:
        fetch = WorkerFetch(engine)
        step = asyncio.Event()

        async def readout(key: str):
            await step.wait()
            return await fetch.vector(key)

        async def greedy_call(key: str):
            await step.wait()
            return await fetch.logsumexp(key)

        tasks = [asyncio.ensure_future(readout(k)) for k in readouts]
        tasks += [asyncio.ensure_future(greedy_call(k)) for k in greedy]
        await asyncio.sleep(0)
        step.set()
        return fetch, await asyncio.gather(*tasks, return_exceptions=True)

    return asyncio.run(run())


def test_read_outs_finished_in_one_step_come_back_in_one_round_trip_each_with_its_own_vector() -> None:
    captured = {f"r{i}": np.full(4, float(i), np.float32) for i in range(12)}
    engine = _Engine(dict(captured), {"g0": {0: 1.5, 1: 2.5}, "g1": {0: 7.0}})
    fetch, got = _step(engine, [f"r{i}" for i in range(12)], ["g0", "g1"])
    assert fetch.round_trips == 1 and len(engine.calls) == 1
    assert [v.tolist() for v in got[:12]] == [captured[f"r{i}"].tolist() for i in range(12)]
    assert got[12:] == [{0: 1.5, 1: 2.5}, {0: 7.0}]
    assert engine.worker._seakr_captured == {} and engine.worker._seakr_lse == {}


def test_a_read_out_the_hook_missed_fails_alone_and_leaves_other_requests_vectors_in_the_worker() -> None:
    engine = _Engine({"r0": np.zeros(2, np.float32), "other": np.ones(2, np.float32)}, {})
    fetch, got = _step(engine, ["r0", "lost"], [])
    assert got[0].tolist() == [0.0, 0.0]
    assert isinstance(got[1], RuntimeError) and "capture hook missed it" in str(got[1])
    assert list(engine.worker._seakr_captured) == ["other"]


def test_a_failed_round_trip_reaches_every_waiting_handler_and_the_next_fetch_starts_afresh() -> None:
    engine = _Engine({"r0": np.zeros(2, np.float32)}, {}, fail=True)
    fetch, got = _step(engine, ["r0", "r1"], ["g"])
    assert all(isinstance(g, RuntimeError) and "engine core died" in str(g) for g in got)
    engine.fail = False
    engine.worker._seakr_captured = {"r2": np.ones(2, np.float32)}

    async def again() -> np.ndarray:
        return await fetch.vector("r2")

    assert asyncio.run(again()).tolist() == [1.0, 1.0]
    assert fetch.round_trips == 2


@pytest.mark.parametrize("waves", [2, 3])
def test_read_outs_of_later_steps_get_a_fetch_of_their_own(waves: int) -> None:
    async def run() -> tuple[int, list]:
        engine = _Engine({f"r{i}": np.full(2, float(i), np.float32) for i in range(waves)}, {})
        fetch = WorkerFetch(engine)
        out = []
        for i in range(waves):
            out.append((await fetch.vector(f"r{i}")).tolist())
        return fetch.round_trips, out

    trips, out = asyncio.run(run())
    assert trips == waves and out == [[float(i)] * 2 for i in range(waves)]
