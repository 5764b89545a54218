"""A profile says which dtype it was made in, and a back-end that runs another gets one warning (issue 67, item 2);
the warning for an uncalibrated model behind a server names the ``seakr calibrate --server URL`` that works from an
app without torch (item 1)."""

from __future__ import annotations

import json
import warnings

import pytest
from fakes import FakeRetriever, ScriptedBackend, passage
from test_calibration import QUESTIONS, respond, setup
from test_plain_server_logic import backend, plain  # noqa: F401 - the plain server stub and its client
from test_reasoner import CONFIG

from seakr_integrations import calibration
from seakr_integrations.calibration import (
    CalibrationMismatchWarning,
    DeltaProfile,
    UncalibratedDeltaWarning,
    prompt_settings,
    shipped_profile,
)
from seakr_integrations.config_resolution import calibrated_config
from seakr_integrations.evaluation.calibrate import calibrate_delta
from seakr_integrations.reasoning import SeaKR, SeaKRConfig

BASE = CONFIG.with_(layer=1, delta=None)


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A shipped profile for the scripted model as the package's are written: without a dtype field."""
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    directory = tmp_path / "shipped"
    directory.mkdir()
    monkeypatch.setattr(calibration, "SHIPPED_PROFILES", directory)
    monkeypatch.setattr(calibration, "_warned", set())
    monkeypatch.setattr(calibration, "_loaded", {})
    prompt = prompt_settings(BASE)
    profile = DeltaProfile("scripted", 1, BASE.source, BASE.estimator, BASE.k, 0.75, "rate", 0.5, prompt=prompt)
    record = {k: v for k, v in profile.to_dict().items() if k != "dtype"}
    (directory / f"{profile.key}__{prompt['exemplar_style']}-{prompt['num_exemplars']}ex.json").write_text(
        json.dumps(record)
    )
    return directory


def _build(dtype: str | None) -> SeaKR:
    model = ScriptedBackend(respond)
    model.dtype = dtype
    return SeaKR(model, FakeRetriever(default=[passage("p1")]), BASE)


def test_a_shipped_profile_was_made_in_float32():
    for path in sorted(calibration.SHIPPED_PROFILES.glob("*.json")):
        assert "dtype" not in json.loads(path.read_text())  # as shipped: float32 is implied
    profile = shipped_profile("smollm2-135m-instruct", 14, SeaKRConfig(k=10))
    assert profile is not None and profile.dtype == "float32"


def test_a_back_end_in_another_dtype_than_its_profile_is_warned_once(shipped):
    with pytest.warns(CalibrationMismatchWarning) as caught:
        seakr = _build("bfloat16")
    (message,) = [str(w.message) for w in caught if "dtype" in str(w.message) or "float32" in str(w.message)]
    assert "runs scripted in bfloat16, but the delta profile" in message and "made in float32" in message
    assert "dtype='float32'" in message and "seakr calibrate --model scripted" in message
    assert seakr.config.delta == 0.75  # the profile still applies: the warning says it may not fit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _build("bfloat16")  # once per process
        _build("float32")
        _build(None)  # a back-end that does not say its dtype


def test_a_server_in_another_dtype_is_named_with_the_command_that_fixes_it(shipped, monkeypatch):
    from test_remote_logic import INFO

    from seakr_integrations.config_resolution import resolve_config

    served = ScriptedBackend(respond)
    served.dtype, served.base_url = "bfloat16", "http://127.0.0.1:8000"
    with pytest.warns(CalibrationMismatchWarning, match="the server at http://127.0.0.1:8000 runs scripted in bf"):
        resolve_config(served, BASE)
    assert INFO["dtype"] == "float32"  # what a seakr server says in /v1/seakr/info


def test_calibrating_records_the_dtype_the_model_ran_in():
    model, retriever = setup()
    model.dtype = "bfloat16"
    profile = calibrate_delta(model, retriever, QUESTIONS, CONFIG, objective="rate", target_rate=0.5)
    assert profile.dtype == "bfloat16" and profile.to_dict()["dtype"] == "bfloat16"


def test_an_uncalibrated_plain_server_is_told_the_calibrate_command_that_needs_no_torch(backend, monkeypatch):  # noqa: F811
    from seakr_integrations.demo import demo_index

    monkeypatch.setattr(calibration, "_warned", set())
    config = SeaKRConfig(estimator="perplexity", k=2, max_tokens=8, num_exemplars=1)
    with pytest.warns(UncalibratedDeltaWarning) as caught:
        SeaKR(backend, demo_index(), config)
    (message,) = [str(w.message) for w in caught if "is uncalibrated" in str(w.message)]
    assert f"seakr calibrate --server {backend.base_url} --dataset QUESTIONS.jsonl --estimator perplexity -k 2" in (
        message
    )
    assert "--model" not in message
    with pytest.raises(LookupError, match=f"seakr calibrate --server {backend.base_url} "):
        calibrated_config(backend, config)


def test_the_suggested_calibrate_command_runs_against_the_plain_server(plain, tmp_path, monkeypatch, capsys):  # noqa: F811
    from seakr_integrations import cli
    from seakr_integrations.calibration import load_profile
    from seakr_integrations.retrieval.bm25 import BM25Index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Paris", "text": "Paris is in France."}) + "\n")
    BM25Index.build(str(corpus), str(tmp_path / "index"))
    questions = tmp_path / "questions.jsonl"
    rows = [{"id": f"q{i}", "question": "Where is Paris?", "answers": ["France"]} for i in (1, 2)]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    command = calibration.calibrate_command("plain-stub", SeaKRConfig(estimator="perplexity", k=2), plain)
    argv = command.split()[1:]  # `seakr` itself
    argv[argv.index("QUESTIONS.jsonl")] = str(questions)
    argv += ["--index", str(tmp_path / "index"), "--no-coverage-check", "--exemplars", "0", "--max-tokens", "8", "-q"]
    argv += ["--objective", "rate", "--target-rate", "0.5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(argv) == 0, capsys.readouterr().err
    assert load_profile("plain-stub", None, "mlp", "perplexity", 2) is not None


def test_an_estimator_a_plain_server_cannot_feed_is_refused_before_any_calibration_advice(backend):  # noqa: F811
    from seakr_integrations.config_resolution import resolve_config

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "calibrate eigenscore against it" advice: it cannot run there at all
        with pytest.raises(ValueError, match="estimator='eigenscore' needs the samples' hidden states"):
            resolve_config(backend, SeaKRConfig())


def test_asking_for_the_calibrated_delta_in_another_dtype_is_refused_naming_both(shipped):
    model = ScriptedBackend(respond)
    model.dtype = "bfloat16"
    with pytest.raises(
        LookupError, match=r"made in float32, and this run loads the model in bfloat16.*--dtype float32"
    ):
        calibrated_config(model, BASE)
    model.dtype = "float32"
    assert calibrated_config(model, BASE).delta == 0.75
