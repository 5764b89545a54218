"""RemoteBackend against a plain OpenAI-compatible server (no seakr routes), without a model: a stub HTTP server that
speaks stock vLLM's /v1/models, /tokenize, /detokenize and /v1/completions.  The real stock server is tested in
test_serving_plain.py."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from seakr_integrations.backends.remote_errors import UnseededSamplesWarning
from seakr_integrations.calibration import DeltaProfile, load_profile, save_profile
from seakr_integrations.config_resolution import calibrated_config
from seakr_integrations.profile_names import profile_key
from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.uncertainty.estimate import estimate
from seakr_integrations.uncertainty.ln_entropy import score as ln_entropy_score
from tests.fakes import Reply, ScriptedBackend

KEY = "sk-plain-secret"
GREEDY = " Paris is in France."
SAMPLES = (" Paris.", " Lyon, France.", " It is Paris.")


def _logprobs(text: str, scale: float) -> list[float]:
    return [-scale * (1 + i % 3) for i in range(len(text))]


def _choice(index: int, text: str, scale: float) -> dict:
    ids = [ord(c) for c in text] + [0]  # the EOS token ends it, as vLLM reports it
    return {
        "index": index,
        "text": text,
        "token_ids": ids,
        "logprobs": {"token_logprobs": _logprobs(text, scale) + [-0.05], "tokens": [*text, ""], "text_offset": []},
        "finish_reason": "stop",
        "stop_reason": None,
    }


class PlainStub(BaseHTTPRequestHandler):
    """Stock vLLM's routes with a one-character-per-token tokenizer; ``tokenize``: whether /tokenize exists."""

    tokenize = True
    template = False
    bodies: list[tuple[str, dict]] = []
    keys: list[str] = []

    def _send(self, status: int, data: object) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.keys.append(self.headers.get("Authorization") or "")
        if self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "plain-stub", "max_model_len": 100_000}]})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        self.keys.append(self.headers.get("Authorization") or "")
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append((self.path, body))
        if self.path == "/tokenize" and self.tokenize:
            if "messages" in body:
                if not self.template:
                    self._send(400, {"error": {"message": "no chat template"}})
                    return
                text = "".join(f"<{m['role']}>{m['content']}" for m in body["messages"]) + "<assistant>"
            else:
                text = body["prompt"]
            self._send(200, {"count": len(text), "max_model_len": 100_000, "tokens": [ord(c) for c in text]})
        elif self.path == "/detokenize" and self.tokenize:
            self._send(200, {"prompt": "".join(chr(t) for t in body["tokens"] if t)})
        elif self.path == "/v1/completions":
            n, prompts = body["n"], body["prompt"]
            if len(body["stop"]) > 4:  # as vLLM: the OpenAI API's limit
                self._send(400, {"error": {"message": "stop: List should have at most 4 items"}})
                return
            if body["temperature"] == 0:
                choices = [_choice(i, GREEDY, 0.1) for i in range(len(prompts))]
            else:
                choices = [_choice(i * n + j, SAMPLES[j % 3], 0.5) for i in range(len(prompts)) for j in range(n)]
            self._send(200, {"id": "cmpl-1", "object": "text_completion", "model": body["model"], "choices": choices})
        else:
            self._send(404, {"detail": "Not Found"})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def plain():
    server = ThreadingHTTPServer(("127.0.0.1", 0), PlainStub)
    PlainStub.tokenize, PlainStub.template, PlainStub.bodies, PlainStub.keys = True, False, [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def backend(plain):
    from seakr_integrations.backends.remote import RemoteBackend

    with RemoteBackend(plain + "/v1", api_key=KEY) as remote:
        yield remote


def test_a_server_without_seakrs_routes_is_used_as_a_plain_openai_server(backend):
    assert backend.kind == "openai" and not backend.reads_hidden_states
    assert backend.model_name == "plain-stub" and backend.max_context == 100_000
    assert not backend.has_chat_template and not backend.supports_logits
    assert "eigenscore" not in backend.estimators and "energy" not in backend.estimators
    assert {"perplexity", "min_token_prob", "ln_entropy", "multi_perplexity", "prompt"} <= set(backend.estimators)
    assert "plain OpenAI-compatible" in repr(backend) and KEY not in repr(backend)
    assert set(PlainStub.keys) == {f"Bearer {KEY}"}


def test_a_chat_template_is_found_through_the_tokenize_route(plain):
    from seakr_integrations.backends.remote import RemoteBackend

    PlainStub.template = True
    with RemoteBackend(plain) as remote:
        assert remote.has_chat_template
        assert remote.chat_prompt("Hi?") == "<user>Hi?<assistant>"


def test_a_server_without_tokenize_is_refused_with_what_it_lacks(plain):
    from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError

    PlainStub.tokenize = False
    with pytest.raises(RemoteBackendError, match=r"/tokenize.*seakr serve") as raised:
        RemoteBackend(plain, api_key=KEY)
    assert KEY not in str(raised.value)


def test_a_generate_call_is_a_greedy_and_an_n_k_completion_with_logprobs(backend):
    prompt = "Question: Where is Paris?\nAnswer:"
    config = dict(k=3, temperature=0.7, top_p=0.8, top_k=20, seed=5, max_tokens=8, min_tokens=1, stop=["\n"])
    with pytest.warns(UnseededSamplesWarning, match="not reproducible.*plain OpenAI-compatible server"):
        (out,) = backend.generate([prompt], **config)
    sent = [body for path, body in PlainStub.bodies if path == "/v1/completions"]
    greedy, sampled = sorted(sent, key=lambda b: b["n"])
    ids = [ord(c) for c in prompt]
    assert greedy["temperature"] == 0 and greedy["n"] == 1 and greedy["prompt"] == [ids]
    assert sampled["n"] == 3 and sampled["prompt"] == [ids]
    for name in ("temperature", "top_p", "top_k"):
        assert sampled[name] == config[name]
    # a plain server cannot say it takes per-request seeds (a stock vLLM on CPU exits on one): none is sent
    assert "seed" not in sampled and "seed" not in greedy
    for body in (greedy, sampled):
        assert body["logprobs"] == 0 and body["return_token_ids"] is True and body["model"] == "plain-stub"
        assert body["max_tokens"] == 8 and body["min_tokens"] == 1 and body["stop"] == ["\n"]
    assert out.greedy.text == GREEDY and out.greedy.token_ids[-1] == 0
    assert out.greedy.logprobs == [*_logprobs(GREEDY, 0.1), -0.05]
    assert out.greedy.offsets is not None and out.greedy.offsets[-1] == len(GREEDY)
    assert [s.text for s in out.samples] == list(SAMPLES) and all(s.eos_vector is None for s in out.samples)
    assert out.prompt_token_ids == ids


def test_a_greedy_only_call_sends_no_sample_request(backend):
    backend.generate(["a prompt", "another"], k=0, max_tokens=4)
    sent = [body for path, body in PlainStub.bodies if path == "/v1/completions"]
    assert len(sent) == 1 and sent[0]["n"] == 1 and len(sent[0]["prompt"]) == 2


def test_the_logprob_estimators_are_computed_from_the_returned_logprobs(backend):
    (out,) = backend.generate(["Question: Where is Paris?\nAnswer:"], k=3, max_tokens=8)
    greedy = np.array([*_logprobs(GREEDY, 0.1), -0.05])
    assert estimate(out, "perplexity").value == pytest.approx(math.exp(-greedy.mean()))
    assert estimate(out, "min_token_prob").value == pytest.approx(1 - math.exp(greedy.min()))
    per_sample = [np.array([*_logprobs(t, 0.5), -0.05]) for t in SAMPLES]
    assert estimate(out, "multi_perplexity").value == pytest.approx(
        np.mean([math.exp(-lp.mean()) for lp in per_sample])
    )
    assert estimate(out, "ln_entropy").value == pytest.approx(ln_entropy_score(out).value)
    assert math.isfinite(estimate(out, "ln_entropy").value)


def test_the_stream_path_runs_on_a_plain_server(backend):
    with backend.stream() as stream:
        ticket = stream.submit("Question: Where is Paris?\nAnswer:", backend_config(k=2))
        done = []
        while stream.pending:
            done += stream.collect()
    ((got, out),) = done
    assert got == ticket and out.greedy.text == GREEDY and len(out.samples) == 2


def backend_config(**changes):
    from seakr_integrations.params import SamplingConfig

    return SamplingConfig(max_tokens=8, **changes)


@pytest.mark.parametrize(
    ("settings", "field", "lacks"),
    [
        ({}, "estimator='eigenscore'", "hidden states"),
        ({"estimator": "energy"}, "estimator='energy'", "raw logits"),
    ],
)
def test_hidden_state_estimators_are_refused_when_seakr_is_built(backend, settings, field, lacks):
    from seakr_integrations.demo import demo_index

    with pytest.raises(ValueError) as raised:
        SeaKR(backend, demo_index(), SeaKRConfig(**settings))
    message = str(raised.value)
    assert field in message and lacks in message and "plain OpenAI-compatible server" in message
    assert 'estimator="perplexity"' in message and "seakr serve MODEL" in message
    assert not [path for path, _ in PlainStub.bodies if path == "/v1/completions"]  # refused before any call
    assert KEY not in message


def test_the_read_out_and_a_layer_are_refused_on_a_plain_server(backend):
    with pytest.raises(ValueError, match="hidden states"):
        backend.last_token_vectors([[1, 2, 3]])
    with pytest.raises(ValueError, match="no layer to read"):
        SeaKR(backend, None, SeaKRConfig(estimator="perplexity", layer=3))


def test_the_framework_models_refuse_eigenscore_at_their_first_call(plain):
    from langchain_seakr import ChatSeaKR

    with pytest.raises(ValueError, match=r"estimator='eigenscore'.*plain OpenAI-compatible"):
        ChatSeaKR(base_url=plain).invoke("Where is Paris?")
    reply = ChatSeaKR(base_url=plain, estimator="perplexity", k=2, max_tokens=8).invoke("Where is Paris?")
    assert reply.content == GREEDY


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_seakr_answers_with_a_logprob_estimator_on_a_plain_server(backend):
    from seakr_integrations.demo import demo_index

    config = SeaKRConfig(estimator="perplexity", k=2, max_tokens=8, num_exemplars=1, max_steps=1)
    seakr = SeaKR(backend, demo_index(), config.with_(rules="paper"))  # every step read by the estimator
    result = seakr.answer("Where is Paris?")
    assert result.steps and result.steps[0].uncertainty.estimator == "perplexity"
    assert seakr.profile is None  # nothing ships for a plain server: its profiles are its own


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_profiles_of_a_plain_server_and_of_hidden_states_never_stand_in_for_each_other(backend, tmp_path):
    """The key of a back-end without hidden states says so; each kind finds only its own profile."""
    assert profile_key("plain-stub", None, "mlp", "perplexity", 2) == "plain-stub__logprobs__perplexity__k2"
    assert profile_key("plain-stub", 1, "mlp", "perplexity", 2) == "plain-stub__layer1__mlp__perplexity__k2"
    reading = ScriptedBackend(lambda prompt, config: Reply("x"))
    reading.model_name = "plain-stub"  # the same model, read in-process (hidden states available)
    config = dict(estimator="perplexity", k=2)
    plain = DeltaProfile("plain-stub", None, "mlp", "perplexity", 2, 1.5, "rate", 0.5)
    save_profile(plain, tmp_path)
    assert load_profile("plain-stub", None, "mlp", "perplexity", 2, tmp_path) == plain
    assert calibrated_config(backend, SeaKRConfig(**config), tmp_path).delta == 1.5
    with pytest.raises(LookupError, match="layer 1"):
        calibrated_config(reading, SeaKRConfig(**config), tmp_path)
    save_profile(DeltaProfile("plain-stub", 1, "mlp", "perplexity", 2, 9.0, "rate", 0.5), tmp_path)
    assert calibrated_config(reading, SeaKRConfig(**config), tmp_path).delta == 9.0
    assert calibrated_config(backend, SeaKRConfig(**config), tmp_path).delta == 1.5
    (tmp_path / "plain-stub__logprobs__perplexity__k2.json").unlink()
    with pytest.raises(LookupError, match="logprobs only"):
        calibrated_config(backend, SeaKRConfig(**config), tmp_path)


def test_seakr_ask_on_a_plain_server_says_which_estimator_to_pass(plain, capsys):
    from seakr_integrations import cli

    assert cli.main(["ask", "Where is Paris?", "--server", plain, "-q"]) == 2
    error = capsys.readouterr().err
    assert "plain OpenAI-compatible server" in error and "--estimator perplexity" in error


def test_calibrating_on_a_plain_server_makes_a_logprobs_profile(backend, tmp_path):
    from seakr_integrations.demo import demo_index
    from seakr_integrations.evaluation.calibrate import calibrate_delta
    from seakr_integrations.evaluation.questions import Question

    questions = [Question("q1", "Where is Paris?", ["France"]), Question("q2", "Where is Lyon?", ["France"])]
    # with the token cascade among the rules, its band is calibrated with delta
    config = SeaKRConfig(estimator="perplexity", k=2, max_tokens=8, num_exemplars=1, rules="default,token-cascade")
    profile = calibrate_delta(backend, demo_index(), questions, config, objective="rate", target_rate=0.5)
    assert profile.layer is None and profile.key == "plain-stub__logprobs__perplexity__k2"
    assert profile.rules["token-cascade"]["estimator"] == "min_token_prob"
    save_profile(profile, tmp_path)
    assert calibrated_config(backend, config, tmp_path).delta == profile.delta


def test_stop_strings_past_the_apis_four_are_applied_to_what_comes_back(backend):
    """SeaKR's calls can stop at five strings; a completions request takes four."""
    stops = ["\n", "Q:", "A:", "###", " in"]
    (out,) = backend.generate(["Question: Where is Paris?\nAnswer:"], k=3, max_tokens=30, stop=stops)
    sent = [body for path, body in PlainStub.bodies if path == "/v1/completions"]
    assert all(body["stop"] == stops[:4] for body in sent)
    greedy = out.greedy
    assert greedy.text == " Paris is" and greedy.stop_reason == " in" and greedy.finish_reason == "stop"
    assert greedy.token_ids == [ord(c) for c in " Paris is in"]  # up to the token that completes the stop string
    assert len(greedy.logprobs) == len(greedy.token_ids) and greedy.offsets[-1] == len(" Paris is")
    assert [s.text for s in out.samples] == list(SAMPLES)  # no " in" there: untouched, EOS kept
    assert out.samples[0].token_ids[-1] == 0


def test_a_stop_cut_places_tokens_by_decoding_when_their_strings_do_not_spell_the_text():
    from seakr_integrations.backends.openai_plain import apply_stops
    from seakr_integrations.outputs import Continuation

    words = Continuation("ab cd ef", [1, 2, 3], [-0.1, -0.2, -0.3], "length")
    decode = {(1,): "ab", (1, 2): "ab cd", (1, 2, 3): "ab cd ef"}
    cut = apply_stops(words, [" cd", "zz"], lambda ids: decode[tuple(ids)])
    assert (cut.text, cut.token_ids, cut.logprobs, cut.stop_reason) == ("ab", [1, 2], [-0.1, -0.2], " cd")
    assert apply_stops(words, ["zz"]) is words
