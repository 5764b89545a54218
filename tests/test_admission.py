"""The server's cap on samples in flight: requests wait for room, then get a 503 with Retry-After; the server goes on.

The cap is unit-tested on ``SampleBudget``, then through seakr's real routes (the plugin's router in a FastAPI app)
with a scripted engine whose generation takes a set time, so that requests overlap as they do under load.
"""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest

from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.serving.admission import Overloaded, SampleBudget
from seakr_integrations.serving.protocol import Limits


def test_a_request_that_fits_is_admitted_and_gives_its_room_back() -> None:
    async def run() -> None:
        budget = SampleBudget(cap=10, queue_seconds=0)
        async with budget.admit(6):
            assert budget.in_flight == 6
            async with budget.admit(4):
                assert budget.in_flight == 10
        assert budget.in_flight == 0

    asyncio.run(run())


def test_past_the_cap_a_request_waits_for_room_then_runs() -> None:
    async def run() -> list[str]:
        budget = SampleBudget(cap=10, queue_seconds=5)
        order: list[str] = []

        async def first() -> None:
            async with budget.admit(8):
                await asyncio.sleep(0.2)
                order.append("first done")

        async def second() -> None:
            await asyncio.sleep(0.05)
            async with budget.admit(8):
                order.append("second runs")

        await asyncio.gather(first(), second())
        return order

    assert asyncio.run(run()) == ["first done", "second runs"]


def test_no_room_within_the_queue_time_is_overloaded_with_a_retry_after() -> None:
    async def run() -> Overloaded:
        budget = SampleBudget(cap=10, queue_seconds=1)
        async with budget.admit(8):
            with pytest.raises(Overloaded) as caught:
                async with budget.admit(8):
                    pass
        assert budget.in_flight == 0
        return caught.value

    refused = asyncio.run(run())
    assert refused.retry_after == 1
    assert "cap of 10 samples in flight" in str(refused) and "retry later" in str(refused)


def test_a_request_larger_than_the_cap_runs_alone_rather_than_never() -> None:
    async def run() -> None:
        budget = SampleBudget(cap=10, queue_seconds=0)
        async with budget.admit(50):
            assert budget.in_flight == 50
            with pytest.raises(Overloaded):
                async with budget.admit(1):
                    pass

    asyncio.run(run())


def test_bad_settings_of_the_cap_are_refused_with_their_variable() -> None:
    with pytest.raises(ValueError, match="SEAKR_SERVE_MAX_SAMPLES_IN_FLIGHT=0"):
        SampleBudget(cap=0, queue_seconds=1)
    with pytest.raises(ValueError, match="SEAKR_SERVE_QUEUE_SECONDS"):
        SampleBudget(cap=1, queue_seconds=-1)


def test_the_cap_is_set_like_the_other_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAKR_SERVE_MAX_SAMPLES_IN_FLIGHT", "64")
    monkeypatch.setenv("SEAKR_SERVE_QUEUE_SECONDS", "0")
    limits = Limits.from_environment()
    assert (limits.max_samples_in_flight, limits.queue_seconds) == (64, 0)


class _SlowEngine:
    """What the routes need of ``ServerEngine``: a tokenizer, the model's facts, and a generation that takes time."""

    layer, source = 1, "mlp"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.facts = SimpleNamespace(model="scripted", max_context=512, vocab_size=100)
        self.tokenizer = lambda text: SimpleNamespace(input_ids=[1, 2, 3])

    def info(self) -> dict[str, object]:
        return {"model": self.facts.model}

    async def generate(self, prompt: str, ids: list[int], config: object) -> SelfAwareOutput:
        await asyncio.sleep(self.seconds)
        greedy = Continuation("Paris", [5], [-0.1], "stop")
        return SelfAwareOutput(prompt=prompt, prompt_token_ids=ids, greedy=greedy, samples=[], layer=1, source="mlp")

    def scores(self, output: object, estimators: object, alpha: float) -> dict[str, object]:
        return {}


def _client(cap: int, queue_seconds: int, seconds: float):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from seakr_integrations.serving.plugin import _router

    app = FastAPI()
    app.include_router(_router())
    app.state.seakr = _SlowEngine(seconds)
    app.state.seakr_limits = Limits()
    app.state.seakr_budget = SampleBudget(cap, queue_seconds)
    return TestClient(app)  # used as a context manager: one event loop for every request, as in the server


BODY = {"prompts": ["Q: capital of France?"], "k": 4, "max_tokens": 8, "estimators": []}


def test_the_route_answers_503_with_retry_after_past_the_cap_and_goes_on_serving() -> None:
    with _client(cap=5, queue_seconds=0, seconds=1.0) as client:
        _overload_then_serve(client)


def _overload_then_serve(client) -> None:
    replies: list[object] = []
    first = threading.Thread(target=lambda: replies.append(client.post("/v1/seakr/generate", json=BODY)))
    first.start()
    time.sleep(0.3)
    refused = client.post("/v1/seakr/generate", json=BODY)
    first.join()
    assert refused.status_code == 503
    assert refused.headers["Retry-After"] == "1"
    assert "samples in flight" in refused.json()["error"]["message"]
    assert replies[0].status_code == 200
    again = client.post("/v1/seakr/generate", json=BODY)
    assert again.status_code == 200 and again.json()["outputs"][0]["greedy"]["text"] == "Paris"
    assert client.get("/v1/seakr/info").json()["samples_in_flight"] == 0


def test_the_route_queues_a_request_while_room_comes_within_the_queue_time() -> None:
    with _client(cap=5, queue_seconds=10, seconds=0.5) as client:
        _three_at_once(client)


def _three_at_once(client) -> None:
    replies: list[object] = []
    threads = [
        threading.Thread(target=lambda: replies.append(client.post("/v1/seakr/generate", json=BODY))) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in replies] == [200, 200, 200]
