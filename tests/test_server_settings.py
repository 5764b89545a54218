"""A server's settings do what they say, and a bad request never takes the server down (issue 67): ``SEAKR_SERVE_*``
values out of range are refused when the server starts; a server that cannot take per-request seeds (a CPU engine
with chunked prefill, where vLLM's worker dies on one) says so in ``/v1/seakr/info``, draws unseeded and refuses a
request that sends a seed; its dtype is in ``/v1/seakr/info`` and its log warns once when it is not the shipped
profiles'.  Without a model: fake engines behind the real routes."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.serving.admission import SampleBudget
from seakr_integrations.serving.protocol import Limits, readout_from_environment


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("MAX_K", "-3", "SEAKR_SERVE_MAX_K=-3: must be a whole number from 1 to 256 (default 64)"),
        ("MAX_K", "0", "SEAKR_SERVE_MAX_K=0: must be a whole number from 1"),
        ("MAX_K", "1000", "SEAKR_SERVE_MAX_K=1000: must be a whole number from 1 to 256"),
        ("MAX_K", "ten", "SEAKR_SERVE_MAX_K='ten': must be a whole number (default 64)"),
        ("MAX_TOKENS", "-1", "SEAKR_SERVE_MAX_TOKENS=-1"),
        ("MAX_PROMPTS", "0", "SEAKR_SERVE_MAX_PROMPTS=0: must be a whole number >= 1"),
        ("MAX_SAMPLES_IN_FLIGHT", "-5", "SEAKR_SERVE_MAX_SAMPLES_IN_FLIGHT=-5"),
        ("QUEUE_SECONDS", "-1", "SEAKR_SERVE_QUEUE_SECONDS=-1: must be a whole number >= 0 (default 30)"),
    ],
)
def test_a_limit_out_of_range_is_refused_naming_its_variable(monkeypatch, name, value, message):
    monkeypatch.setenv(f"SEAKR_SERVE_{name}", value)
    with pytest.raises(ValueError, match="set it to one, or unset it") as raised:
        Limits.from_environment()
    assert message in str(raised.value)


def test_the_limits_in_range_and_the_read_out_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("SEAKR_SERVE_MAX_K", "8")
    monkeypatch.setenv("SEAKR_SERVE_QUEUE_SECONDS", "0")
    assert Limits.from_environment() == Limits(max_k=8, queue_seconds=0)
    assert readout_from_environment() == (None, "mlp")
    monkeypatch.setenv("SEAKR_SERVE_LAYER", "3")
    monkeypatch.setenv("SEAKR_SERVE_SOURCE", "residual")
    assert readout_from_environment() == (3, "residual")
    for variable, bad in (("SEAKR_SERVE_LAYER", "-1"), ("SEAKR_SERVE_LAYER", "x"), ("SEAKR_SERVE_SOURCE", "attn")):
        monkeypatch.setenv(variable, bad)
        with pytest.raises(ValueError, match=f"{variable}='{bad}'"):
            readout_from_environment()
        monkeypatch.setenv(variable, "3" if variable.endswith("LAYER") else "mlp")


def test_seakr_serve_refuses_a_bad_limit_before_starting_anything(monkeypatch, capsys):
    import os

    from seakr_integrations import cli

    def no_server(*args):  # pragma: no cover - reached only if the check were missing
        raise AssertionError("the server would have started")

    monkeypatch.setattr(os, "execve", no_server)
    monkeypatch.setenv("SEAKR_SERVE_MAX_K", "-3")
    for argv in (["serve", "smollm2"], ["serve", "--dry-run", "smollm2"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "seakr: error: SEAKR_SERVE_MAX_K=-3: must be a whole number from 1 to 256" in err
        assert "Traceback" not in err


class _Engine:
    """A server engine that answers every prompt with "Paris"; ``takes_seeds`` and ``dtype`` as a real one's."""

    def __init__(self, takes_seeds: bool = True, dtype: str = "float32") -> None:
        self.takes_seeds, self.dtype = takes_seeds, dtype
        self.facts = SimpleNamespace(model="fake", weights="fake", max_context=512, vocab_size=100)
        self.tokenizer = lambda text: SimpleNamespace(input_ids=[1, 2, 3])
        self.layer, self.source = 1, "mlp"
        self.configs: list[object] = []

    def info(self) -> dict[str, object]:
        return {"model": "fake", "seeded_sampling": self.takes_seeds, "dtype": self.dtype}

    async def generate(self, prompt: str, ids: list[int], config: object) -> SelfAwareOutput:
        self.configs.append(config)
        greedy = Continuation("Paris", [5], [-0.1], "stop")
        return SelfAwareOutput(prompt=prompt, prompt_token_ids=ids, greedy=greedy, samples=[], layer=1, source="mlp")

    def scores(self, output: object, estimators: object, alpha: float) -> dict[str, object]:
        return {}


def _client(engine: object | None, error: str = ""):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from seakr_integrations.serving.plugin import _router

    app = FastAPI()
    app.include_router(_router())
    app.state.seakr, app.state.seakr_error = engine, error
    app.state.seakr_limits = Limits()
    app.state.seakr_budget = SampleBudget(64, 0)
    return TestClient(app)


BODY = {"prompts": ["Q: capital of France?"], "k": 2, "max_tokens": 8, "estimators": []}


def test_a_server_without_seeds_refuses_a_seed_and_serves_without_one():
    engine = _Engine(takes_seeds=False)
    with _client(engine) as client:
        refused = client.post("/v1/seakr/generate", json={**BODY, "seed": 7})
        assert refused.status_code == 400
        message = refused.json()["error"]["message"]
        assert "seed=7: this server takes no per-request seed" in message
        assert "CPU Generator does not use offset" in message
        assert "--no-enable-chunked-prefill" in message
        served = client.post("/v1/seakr/generate", json=BODY)  # the server goes on; without a seed it answers
        assert served.status_code == 200 and served.json()["outputs"][0]["greedy"]["text"] == "Paris"
        assert client.get("/v1/seakr/info").json()["seeded_sampling"] is False
    with _client(_Engine()) as client:
        assert client.post("/v1/seakr/generate", json={**BODY, "seed": 7}).status_code == 200


def test_a_bad_setting_turns_seakrs_routes_off_with_the_reason_and_nothing_else(monkeypatch):
    from seakr_integrations.serving.plugin import SeaKREndpointPlugin

    monkeypatch.setenv("SEAKR_SERVE_MAX_K", "-3")
    state = SimpleNamespace()
    asyncio.run(SeaKREndpointPlugin().init_state(object(), state, SimpleNamespace()))
    assert state.seakr is None and "SEAKR_SERVE_MAX_K=-3" in state.seakr_error
    with _client(None, state.seakr_error) as client:
        answer = client.get("/v1/seakr/info")
    assert answer.status_code == 503 and "SEAKR_SERVE_MAX_K=-3" in answer.json()["error"]["message"]


def test_the_log_warns_once_at_start_about_unseeded_samples_and_another_dtype():
    from seakr_integrations.serving.plugin import start_warnings

    assert start_warnings(_Engine()) == []
    packaged = _Engine(takes_seeds=False, dtype="bfloat16")
    packaged.facts.model = "qwen"
    seeds, dtype = start_warnings(packaged)
    assert "takes no per-request seed" in seeds and "not reproducible" in seeds
    assert "runs qwen2.5-coder-0.5b-instruct in bfloat16" in dtype and "made in float32" in dtype
    assert "seakr calibrate --server URL" in dtype
    assert start_warnings(_Engine(dtype="bfloat16")) == []  # no shipped profile to disagree with
    from seakr_integrations.models import PACKAGED_MODELS, _target

    by_weights = _Engine(dtype="bfloat16")  # served from the converted directory, under its path
    by_weights.facts.model, by_weights.facts.weights = "/cache/x", _target(PACKAGED_MODELS[0]).name
    (dtype,) = start_warnings(by_weights)
    assert f"runs {PACKAGED_MODELS[0].name} in bfloat16" in dtype


def test_the_engine_says_whether_it_takes_seeds_and_its_dtype_and_draws_unseeded_when_not():
    pytest.importorskip("vllm", reason="vLLM is not installed")
    import torch
    from vllm import SamplingParams

    from seakr_integrations.backends.vllm_settings import request_params, takes_seeds
    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.serving.engine import ServerEngine

    assert not takes_seeds(on_cpu=True, chunked_prefill=True)
    assert takes_seeds(on_cpu=True, chunked_prefill=False) and takes_seeds(on_cpu=False, chunked_prefill=True)
    config = SamplingConfig(k=3, seed=9)
    assert request_params(SamplingParams, config)[1].seed == 9
    assert request_params(SamplingParams, config, seeded=False)[1].seed is None

    async def rpc(name, args=()):
        return [{"logits": False}]

    def engine(chunked: bool) -> SimpleNamespace:
        model = SimpleNamespace(
            get_total_num_hidden_layers=lambda: 4,
            enforce_eager=True,
            served_model_name="fake",
            model="/models/fake-model",
            get_hidden_size=lambda: 8,
            max_model_len=512,
            get_vocab_size=lambda: 100,
            dtype=torch.bfloat16,
        )
        return SimpleNamespace(
            model_config=model,
            vllm_config=SimpleNamespace(scheduler_config=SimpleNamespace(enable_chunked_prefill=chunked)),
            collective_rpc=rpc,
            get_tokenizer=lambda: SimpleNamespace(eos_token_id=2, chat_template=None),
        )

    from vllm.platforms import current_platform

    started = asyncio.run(ServerEngine.start(engine(chunked=True), None, "mlp", True))
    info = started.info()
    assert info["dtype"] == "bfloat16" and info["weights"] == "fake-model"
    assert info["seeded_sampling"] is (not current_platform.is_cpu())
    assert asyncio.run(ServerEngine.start(engine(chunked=False), None, "mlp", True)).info()["seeded_sampling"] is True


def test_an_in_process_cpu_engine_with_chunked_prefill_is_refused_before_it_starts(tmp_path):
    pytest.importorskip("vllm", reason="vLLM is not installed")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("vLLM's GPU runner takes seeds under chunked prefill: nothing to refuse")
    from seakr_integrations.backends.vllm import VLLMBackend

    (tmp_path / "config.json").write_text('{"max_position_embeddings": 512}')
    with pytest.raises(ValueError, match="enable_chunked_prefill=True: vLLM's CPU runner crashes on a request with"):
        VLLMBackend(str(tmp_path), enable_chunked_prefill=True)
