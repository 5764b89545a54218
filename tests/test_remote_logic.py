"""The serving logic without a model: request checks, the wire format, and RemoteBackend's retries and errors
against a local stub HTTP server.  The real server is tested in test_serving.py."""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.reasoning.jsonform import uncertainty_from_dict
from seakr_integrations.serving.protocol import BadRequest, Limits, parse_generate
from seakr_integrations.uncertainty.estimate import Uncertainty, estimate
from seakr_integrations.wire import (
    continuation_to_json,
    decode_vectors,
    encode_vectors,
    output_from_json,
    uncertainty_to_json,
)

LIMITS = Limits(max_k=32, max_tokens=200, max_prompts=3, max_prompt_chars=100)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "JSON object"),
        ({"prompts": ["q"], "k": 33}, "max_k"),
        ({"prompts": ["q"], "max_tokens": 201}, "max_tokens"),
        ({"prompts": ["q"] * 4}, "max_prompts"),
        ({"prompts": ["x" * 101]}, "max_prompt_chars"),
        ({"prompts": ["q"], "messages": [[{"role": "user", "content": "q"}]]}, "exactly one"),
        ({"prompts": []}, "non-empty"),
        ({"prompts": [" "]}, "empty"),
        ({"messages": [[{"role": "user"}]]}, r"messages\[0\]"),
        ({"prompts": ["q"], "k": "many"}, "must be an integer"),
        ({"prompts": ["q"], "top_p": 2.0}, "top_p"),
        ({"prompts": ["q"], "stop": "\n"}, "list of strings"),
        ({"prompts": ["q"], "estimators": ["prompt"]}, "call of its own"),
        ({"prompts": ["q"], "alpha": 0}, "alpha"),
        ({"prompts": ["q"], "vector_dtype": "int8"}, "vector_dtype"),
        ({"prompts": ["q"], "kk": 2}, "unknown field"),
    ],
)
def test_every_bad_request_names_what_is_wrong(body, message):
    with pytest.raises(BadRequest, match=message):
        parse_generate(body, LIMITS)


def test_a_good_request_becomes_one_sampling_config():
    request = parse_generate({"prompts": ["q"], "k": 4, "stop": ["\n"], "estimators": ["perplexity"]}, LIMITS)
    assert request.config.k == 4 and request.config.stop == ("\n",) and request.estimators == ("perplexity",)
    assert request.prompts == ["q"] and not request.return_vectors


def test_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("SEAKR_SERVE_MAX_K", "12")
    assert Limits.from_environment().max_k == 12
    monkeypatch.setenv("SEAKR_SERVE_MAX_K", "lots")
    with pytest.raises(ValueError, match="SEAKR_SERVE_MAX_K"):
        Limits.from_environment()


def test_the_wire_format_round_trips():
    vectors = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_array_equal(decode_vectors(encode_vectors(vectors, "float32")), vectors)
    np.testing.assert_allclose(decode_vectors(encode_vectors(vectors, "float16")), vectors, atol=2e-3)
    for value in (1.5, math.inf, -math.inf):
        u = Uncertainty(value, "eigenscore", 3, note="x")
        assert uncertainty_from_dict(json.loads(json.dumps(uncertainty_to_json(u))), strict=True) == u
    greedy = Continuation("Paris", [5, 6], [-0.1, -math.inf], "stop", logit_lse=[1.0, 2.0], offsets=[3, 5])
    data = {
        "prompt_token_ids": [1, 2],
        "greedy": continuation_to_json(greedy, with_lse=True),
        "samples": [continuation_to_json(Continuation("a", [3], [-1.0], "length"))] * 3,
        "layer": 2,
        "source": "mlp",
        "uncertainty": {"eigenscore": uncertainty_to_json(Uncertainty(-4.2, "eigenscore", 3))},
        "eos_vectors": encode_vectors(vectors, "float32"),
    }
    out = output_from_json("p", json.loads(json.dumps(data)))
    assert out.greedy.logprobs[1] == -math.inf and out.greedy.logit_lse == [1.0, 2.0] and out.greedy.offsets == [3, 5]
    np.testing.assert_array_equal(out.eos_vectors(), vectors)


def test_estimate_uses_the_servers_score_when_the_vectors_stayed_there():
    samples = [Continuation("a", [1], [0.0], "stop") for _ in range(3)]
    out = SelfAwareOutput("p", [1], Continuation("a", [1], [0.0], "stop"), samples, 1, "mlp")
    out.scores = {"eigenscore": Uncertainty(-3.0, "eigenscore", 3)}
    assert estimate(out).value == -3.0
    with pytest.raises(ValueError, match="return_vectors=True"):
        estimate(out, alpha=0.5)


# ------------------------------------------------------------------------------------------------ the HTTP client
INFO = {
    "model": "stub",
    "num_layers": 4,
    "hidden_size": 8,
    "max_context": 512,
    "eos_token_id": 0,
    "default_layer": 1,
    "estimators": ["eigenscore"],
    "supports_logits": False,
    "chat_template": False,
    "seeded_sampling": True,
    "dtype": "float32",
}


class Stub(BaseHTTPRequestHandler):
    """Answers /v1/seakr/info; ``script`` is a list of (status, delay) for the next requests."""

    script: list[tuple[int, float]] = []
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append(self.headers.get("Authorization") or "")
        status, delay = self.script.pop(0) if self.script else (200, 0.0)
        time.sleep(delay)
        body = json.dumps(INFO if status == 200 else {"error": {"message": "nope"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    Stub.script, Stub.seen = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_client_retries_a_busy_server_and_sends_the_key(stub):
    from seakr_integrations.backends.remote import RemoteBackend

    Stub.script = [(503, 0.0), (503, 0.0)]
    backend = RemoteBackend(stub + "/v1", api_key="sk-secret-1")
    assert backend.model_name == "stub" and backend.num_layers == 4
    assert Stub.seen == ["Bearer sk-secret-1"] * 3
    assert "sk-secret-1" not in repr(backend)


def test_client_errors_name_the_url_and_status_never_the_key(stub):
    from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError

    Stub.script = [(401, 0.0)]
    with pytest.raises(RemoteBackendError, match="HTTP 401") as raised:
        RemoteBackend(stub, api_key="sk-secret-2")
    assert stub in str(raised.value) and "sk-secret-2" not in str(raised.value)
    Stub.script = [(200, 2.0)]
    with pytest.raises(RemoteBackendError, match="timed out"):
        RemoteBackend(stub, timeout=0.5)


def test_an_unreachable_server_is_a_clear_error_after_the_retries():
    from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError

    with pytest.raises(RemoteBackendError, match=r"127\.0\.0\.1:9.*failed after \d+ attempts.*seakr serve"):
        RemoteBackend("http://127.0.0.1:9")
    with pytest.raises(ValueError, match="give the server's URL"):
        RemoteBackend("localhost:8000")


def test_seakr_serve_is_vllm_serve_with_the_plugin_and_the_settings_the_readout_needs():
    from seakr_integrations.serving.launch import TOP_K_TOP_P, WORKER_EXTENSION, serve_command

    args, env = serve_command("smollm2", ["--port", "8123"], on_cpu=True)
    assert args[1:4] in (
        ["-m", "vllm.entrypoints.cli.main", "serve"],
        ["-m", "vllm.entrypoints.launchers.api_server.entry", "--model"],
    )
    assert env["VLLM_PLUGINS"].split(",")[-1] == "seakr" and env["VLLM_USE_V2_MODEL_RUNNER"] == "0"
    flags = " ".join(args)
    for part in (
        "--host 127.0.0.1",
        f"--worker-extension-cls {WORKER_EXTENSION}",
        "--enforce-eager",
        "--enable-prefix-caching",
        f"--logits-processors {TOP_K_TOP_P}",
        "--served-model-name smollm2",
        "--no-enable-chunked-prefill",
        "--load-format seakr",  # frees vLLM's duplicate vocabulary weights (registered by seakr's extension)
        "--port 8123",
    ):
        assert part in flags
    args, _ = serve_command("smollm2", ["--worker-extension-cls", "their.Extension"], on_cpu=True)
    assert "--load-format" not in args and WORKER_EXTENSION not in args
    args, _ = serve_command("smollm2", ["--host", "0.0.0.0", "--max-model-len", "1024"], on_cpu=False)
    assert "127.0.0.1" not in args and args.count("--max-model-len") == 1 and "--block-size" not in args


def test_the_generate_body_the_client_sends_is_one_the_server_accepts(stub):
    """The client sends every ``SamplingConfig`` field; a field added there must be added to the server's body too."""
    from seakr_integrations.backends.remote import RemoteBackend
    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.serving.protocol import GenerateRequest

    Stub.script = []
    backend = RemoteBackend(stub)
    assert backend.seeded  # the server says it takes seeds (seeded_sampling in /v1/seakr/info)
    config = SamplingConfig(k=3, max_tokens=5, stop=("\n",), seed=11, layer=2)
    body = backend._body(["a prompt"], config, layer=2)
    assert set(body) <= set(GenerateRequest.model_fields)
    assert parse_generate(body, Limits()).config == config


def test_a_seakr_server_that_does_not_say_it_takes_seeds_gets_none(stub, monkeypatch):
    from seakr_integrations.backends.remote import RemoteBackend
    from seakr_integrations.params import SamplingConfig

    monkeypatch.setitem(INFO, "seeded_sampling", False)
    backend = RemoteBackend(stub)
    body = backend._body(["a prompt"], SamplingConfig(k=3, seed=11), layer=1)
    assert not backend.seeded and "seed" not in body
    assert parse_generate(body, Limits()).seed is None  # the server sees no seed, and draws unseeded
    monkeypatch.delitem(INFO, "seeded_sampling")  # an older server that says nothing: no seed either
    assert not RemoteBackend(stub).seeded
