"""``seakr calibrate`` checks every option before a model loads or a request is sent, and a calibration that fails
at its end keeps what it computed: the sweep and the chosen delta printed, the profile written where it can be."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fakes import FakeRetriever, ScriptedBackend, passage
from test_reasoner_components import eiffel

import seakr_integrations.cli as cli
from seakr_integrations import calibration
from seakr_integrations.calibration import DeltaProfile
from seakr_integrations.cli import calibrate
from seakr_integrations.cli.calibrate import write_kept
from seakr_integrations.evaluation import calibration_evidence
from seakr_integrations.evaluation.calibrate import CalibrationIncomplete, calibrate_delta
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import Decision, Rule, StateProbe, TokenCascade

QUESTION = "Which country is the Eiffel Tower in?"
SMALL = ["-k", "4", "--exemplars", "0", "--max-tokens", "10", "--points", "3", "--no-coverage-check", "-q"]


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A 12-question file, a profile directory, a cache of the test's own and a scripted retriever (no index)."""
    questions = tmp_path / "questions.jsonl"
    rows = [{"id": f"q{i}", "question": QUESTION, "answers": ["France"]} for i in range(12)]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))  # a kept profile's fallback stays in the test's
    monkeypatch.setattr(calibration, "_warned", set())
    monkeypatch.setattr(calibrate, "checked_retriever", lambda args, qs: (FakeRetriever(default=[passage("p1")]), {}))
    return tmp_path


def argv(workspace, *extra: str) -> list[str]:
    extra = tuple(e.replace("{tmp}", str(workspace)) for e in extra)
    return ["calibrate", "--dataset", str(workspace / "questions.jsonl"), *SMALL, *extra]


def no_backend(args):
    pytest.fail("the back-end was built before the options were checked")


BAD = [
    (("--target-rate", "5"), "--target-rate 5: the fraction of first steps that should retrieve must be in [0, 1]"),
    (("--target-rate", "1.5"), "--target-rate 1.5: the fraction of first steps that should retrieve must be in [0, 1]"),
    (("--target-rate", "-0.1", "--objective", "rate"), "--target-rate -0.1: the fraction of first steps"),
    (("--target-rate", "nan"), "--target-rate nan: the fraction of first steps"),
    (("--objective", "rate"), "--objective rate needs --target-rate R"),
    (("--points", "1"), "--points 1: the sweep needs at least 2 thresholds"),
    (("--points", "0"), "--points 0: the sweep needs at least 2 thresholds"),
    (
        ("--cascade-band", "0.1", "0.5"),
        "--cascade-band needs the token-cascade rule, which the default preset leaves out",
    ),
    (("--profile-dir", "{tmp}/a-file"), "a-file is a file, not a directory; name a directory that can be written"),
    (("--profile-dir", "{tmp}/a-file/profiles"), "profiles cannot be created: "),
    (
        ("--rules", "default,state-probe", "--limit", "5"),
        "the state-probe rule trains its probe on at least 10 calibration questions (5 where retrieval helps and 5 "
        "where it does not), and 5 were given: calibrate on more questions (100 HotpotQA questions gave 27 where it "
        "helped), or leave state-probe out of the rules",
    ),
    (("--rules", "paper,state-probe", "--start", "3"), "probe on at least 10 calibration questions (5 where retrieval"),
]


@pytest.mark.parametrize(("extra", "message"), BAD, ids=[" ".join(e) for e, _ in BAD])
def test_a_bad_option_is_refused_before_the_backend_is_built(workspace, monkeypatch, capsys, extra, message):
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", no_backend)
    assert cli.main(argv(workspace, *extra)) == 2
    out, err = capsys.readouterr()
    assert message in err, err
    assert err.startswith("seakr: error: ") and "Traceback" not in err and not out


def test_the_default_profile_directory_is_checked_too(workspace, monkeypatch, capsys):
    (workspace / "cache").write_text("a file where the cache directory should be")
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", no_backend)
    assert cli.main(argv(workspace)) == 2
    err = capsys.readouterr().err
    assert f"the profile directory {workspace}/cache/calibration (the default) cannot be created" in err
    assert "pass --profile-dir DIR" in err


def test_a_probe_on_a_plain_server_is_refused_before_any_lm_call(workspace, monkeypatch, capsys):
    def respond(prompt, config):
        pytest.fail("an LM call was made before the state-probe rule was checked against the back-end")

    def plain(args):
        backend = ScriptedBackend(respond)
        backend.reads_hidden_states = False  # what RemoteBackend says of a plain OpenAI-compatible server
        backend.base_url = "http://127.0.0.1:9"
        return backend

    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", plain)
    assert cli.main(argv(workspace, "--rules", "default,state-probe", "--estimator", "perplexity")) == 2
    err = capsys.readouterr().err
    assert (
        "seakr: error: the state-probe rule trains its probe on the first step's hidden state, and scripted is served "
        "by a plain OpenAI-compatible server at http://127.0.0.1:9, which returns token log-probabilities only: serve "
        "the model with `seakr serve MODEL`"
    ) in err
    assert "run it in-process" in err and "Traceback" not in err


def test_good_options_still_calibrate(workspace, monkeypatch, capsys):
    """A target rate under objective f1 is allowed (the verdict compares with it) and recorded."""
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: ScriptedBackend(eiffel))
    extra = ("--target-rate", "0.5", "--profile-dir", "{tmp}/new/profiles", "--json")
    assert cli.main(argv(workspace, *extra)) == 0
    profile = json.loads(capsys.readouterr().out)
    assert profile["objective"] == "f1" and profile["target_rate"] == 0.5
    assert profile["profile"].startswith(str(workspace / "new" / "profiles"))


@dataclass(frozen=True)
class FirstStepsAbove(Rule):
    """A user's rule, not the package's, that learns from a calibration: how many first steps were above delta."""

    name: ClassVar[str] = "first-steps-above"
    decision: ClassVar[Decision] = "when to retrieve"
    above: int | None = None

    def read_step(self, state: Any, text: str, output: Any) -> GateReason | None:
        """Retrieve at once where the calibration saw first steps above delta (a toy decision: the test is about
        what it learns)."""
        return GateReason.UNCERTAIN if self.above else None

    def learn(self, evidence: Any) -> dict[str, Any]:
        return {"above": sum(u > evidence.delta for u in evidence.uncertainties), "of": len(evidence.outputs)}

    def calibrated(self, profile: Any) -> FirstStepsAbove:
        state = profile.rules.get(self.name) if profile is not None else None
        return replace(self, above=state["above"]) if state else self


def test_a_user_rule_s_learned_state_is_stored_under_its_name_and_read_back(workspace, monkeypatch, capsys):
    """No option, profile field or calibrate code of its own: ``--rules`` names it (it registered itself when its
    class was defined), the calibration hands it the evidence, the profile on disk keeps what it returns."""
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: ScriptedBackend(eiffel))
    profiles = workspace / "profiles"
    extra = ("--rules", "default,first-steps-above", "--profile-dir", str(profiles), "--json")
    assert cli.main(argv(workspace, *extra)) == 0
    path = json.loads(capsys.readouterr().out)["profile"]
    stored = json.loads(Path(path).read_text("utf-8"))
    assert list(stored["rules"]) == ["first-steps-above"]  # the default rules learn nothing
    learned = stored["rules"]["first-steps-above"]
    assert learned["of"] == 12 and 0 <= learned["above"] <= 12
    profile = calibration.load_profile("scripted", 1, "mlp", "eigenscore", 4, profiles)
    assert FirstStepsAbove().calibrated(profile) == FirstStepsAbove(above=learned["above"])
    config = SeaKRConfig(rules=(FirstStepsAbove(),))
    assert calibration.resolve_rules(profile, config) == (FirstStepsAbove(above=learned["above"]),)


def test_a_failed_save_keeps_the_profile_and_prints_the_sweep(workspace, monkeypatch, capsys):
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: ScriptedBackend(eiffel))

    def disk_full(profile, root=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(calibration, "save_profile", disk_full)
    profiles = workspace / "profiles"
    assert cli.main(argv(workspace, "--profile-dir", str(profiles))) == 2
    out, err = capsys.readouterr()
    assert "<- chosen" in out and "not saved as a profile" in out
    delta = float(out.split("delta = ")[1].split()[0])
    assert f"seakr: error: could not save the profile in {profiles}: [Errno 28] No space left on device" in err
    assert "the profile is kept whole in" in err and f"or pass --delta {delta:.4f}" in err
    (kept,) = profiles.glob("scripted__layer1__mlp__eigenscore__k4.unsaved.*.json")
    assert f"kept whole in {kept}: rename it to {profiles}/scripted__layer1__mlp__eigenscore__k4.json" in err
    profile = DeltaProfile(**json.loads(kept.read_text()))
    assert profile.delta == pytest.approx(delta) and profile.sweep and profile.verdict
    assert calibration.load_profile("scripted", 1, "mlp", "eigenscore", 4, profiles) is None  # not taken as one


def test_a_stage_failing_after_the_sweep_keeps_the_sweep(workspace, monkeypatch, capfd):
    """Raised while the engine runs (its log's tail goes with the error): the sweep reaches the terminal's standard
    error, the command's own while the engine's output goes to its log (capfd: descriptor 2)."""
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: ScriptedBackend(eiffel))

    def server_gone(*args, **kwargs):
        raise RuntimeError("the server went away")

    monkeypatch.setattr(calibration_evidence, "baseline_f1", server_gone)
    profiles = workspace / "profiles"
    assert cli.main(argv(workspace, "--profile-dir", str(profiles), "--json")) == 2
    out, err = capfd.readouterr()
    assert not out  # --json: standard output stays for the JSON
    assert "<- chosen" in err and "not saved as a profile" in err
    assert "then judging the gate (closed-book and single-retrieval answers) failed: RuntimeError: the " in err
    assert "server went away; the sweep and delta are kept in" in err and "Traceback" not in err
    (kept,) = profiles.glob("*.partial.*.json")
    partial = json.loads(kept.read_text())
    assert partial["sweep"] and not partial["verdict"]
    assert not list(profiles.glob("*__k4.json"))


def test_the_kept_profile_falls_back_to_the_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "a-file").write_text("")
    profile = DeltaProfile("m", 1, "mlp", "eigenscore", 4, 0.5, "f1", sweep=[{"delta": 0.5}])
    kept = write_kept(profile, tmp_path / "a-file", "unsaved")
    assert kept is not None and kept.parent == tmp_path / "tmp" and json.loads(kept.read_text())["delta"] == 0.5


QUESTIONS = [Question(f"q{i}", QUESTION, ("France",)) for i in range(12)]
CONFIG = SeaKRConfig(k=4, num_exemplars=0, max_tokens=10, rules=())

LIBRARY_BAD = [
    ({"objective": "rate"}, "objective='rate' needs target_rate R"),
    ({"target_rate": 5.0}, "target_rate=5.0: the fraction of first steps that should retrieve must be in [0, 1]"),
    ({"points": 1}, "points=1: the sweep needs at least 2 thresholds"),
    ({"rules": (TokenCascade(agreement=0.3),)}, "agreement=0.3: the share of the steps the cascade band decides"),
    ({"rules": (TokenCascade(agreement=float("nan")),)}, "agreement=nan: must be a finite number"),
    ({"rules": (StateProbe(),), "questions": QUESTIONS[:9]}, "state-probe rule trains its probe on at least 10 "
     "calibration questions (5 where retrieval helps and 5 where it does not), and 9 were given"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "message"), LIBRARY_BAD, ids=[str(k) for k, _ in LIBRARY_BAD])
def test_calibrate_delta_refuses_before_its_first_call(kwargs, message):
    def respond(prompt, config):
        pytest.fail("an LM call was made before the settings were checked")

    kwargs = dict(kwargs)
    questions = kwargs.pop("questions", QUESTIONS)
    config = CONFIG.with_(rules=kwargs.pop("rules", ()))
    with pytest.raises(ValueError, match=re.escape(message)):
        calibrate_delta(ScriptedBackend(respond), FakeRetriever(), questions, config, progress=False, **kwargs)


def test_calibrate_delta_refuses_a_probe_on_a_backend_without_hidden_states():
    backend = ScriptedBackend(lambda prompt, config: pytest.fail("an LM call was made"))
    backend.reads_hidden_states = False
    config = CONFIG.with_(estimator="perplexity", rules=(StateProbe(),))
    with pytest.raises(ValueError, match="state-probe rule trains its probe on the first step's hidden state, and "):
        calibrate_delta(backend, FakeRetriever(), QUESTIONS, config)


def test_calibrate_delta_hands_back_the_sweep_when_a_later_stage_fails(monkeypatch):
    monkeypatch.setattr(calibration_evidence, "baseline_f1", lambda *a, **k: (_ for _ in ()).throw(KeyError("x")))
    retriever = FakeRetriever(default=[passage("p1")])
    with pytest.raises(CalibrationIncomplete, match="then judging the gate .* failed: KeyError") as caught:
        calibrate_delta(ScriptedBackend(eiffel), retriever, QUESTIONS, CONFIG, points=3, progress=False)
    partial = caught.value.partial
    assert [row for row in partial.sweep if row.get("chosen")] and partial.questions == 12 and not partial.verdict
