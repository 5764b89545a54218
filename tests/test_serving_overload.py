"""A real ``seakr serve smollm2`` given more sampling work than its cap on samples in flight: the excess gets HTTP
503 with ``Retry-After`` (here at once: ``SEAKR_SERVE_QUEUE_SECONDS=0``), the server goes on serving, and
``RemoteBackend`` clients, which honour ``Retry-After``, all get their answers."""

from __future__ import annotations

import concurrent.futures

import pytest

from tests.test_serving import PROMPT, _start, _stop

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

K = 16
BODY = {"prompts": [PROMPT], "k": K, "max_tokens": 32, "min_tokens": 32, "estimators": ["perplexity"]}


@pytest.fixture(scope="module")
def capped_server(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("SEAKR_SERVE_MAX_SAMPLES_IN_FLIGHT", str(2 * (K + 1)))  # two requests of k=16 at once
    patch.setenv("SEAKR_SERVE_QUEUE_SECONDS", "0")
    try:
        process, url = _start(tmp_path_factory.mktemp("capped"))
    finally:
        patch.undo()
    yield url
    _stop(process)


def test_work_past_the_cap_is_a_503_with_retry_after_and_the_server_goes_on(capped_server):
    import httpx

    def post(_: int) -> httpx.Response:
        return httpx.post(capped_server + "/v1/seakr/generate", json=BODY, timeout=300)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(post, range(8)))
    statuses = sorted(r.status_code for r in replies)
    assert set(statuses) == {200, 503}, statuses
    refused = [r for r in replies if r.status_code == 503]
    assert all(r.headers.get("Retry-After") == "1" for r in refused)
    assert all("samples in flight" in r.json()["error"]["message"] for r in refused)
    info = httpx.get(capped_server + "/v1/seakr/info", timeout=30).json()
    assert info["samples_in_flight"] == 0 and info["limits"]["max_samples_in_flight"] == 2 * (K + 1)
    assert post(0).status_code == 200  # the server goes on


def test_remote_clients_honour_retry_after_and_all_get_their_answers(capped_server):
    from seakr_integrations.backends.remote import RemoteBackend

    with RemoteBackend(capped_server, timeout=300) as backend:

        def generate(_: int) -> int:
            (out,) = backend.generate([PROMPT], k=K, max_tokens=32, min_tokens=32, seed=1)
            return len(out.samples)

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            assert list(pool.map(generate, range(6))) == [K] * 6
