"""Every file seakr reads back is checked when it is read, against one schema per kind (``stored_schemas``): a delta
profile, a rule's learned state inside one (the state probe, the cascade band: when the rule reads it), a results
header, a trace in a results record.  Each corruption a file meets in
practice (cut short, a wrong type, a missing field, NaN, a huge value) is refused with the file, the field and what
to do, never a bare KeyError, AttributeError, TypeError or numpy error; the files the repository ships still read."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_trace_tables import _result

from seakr_integrations.calibration import (
    SHIPPED_PROFILES,
    DeltaProfile,
    load_profile,
    read_profile,
    save_profile,
    shipped_profile,
)
from seakr_integrations.evaluation.results import FORMAT, read_header, read_results, read_traces, run_settings
from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import StateProbe, TokenCascade
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.uncertainty.linear_probe import LinearProbe

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 8
PROBE = LinearProbe(1, "mlp", "retrieval helps", (0.0,) * WIDTH, (1.0,) * WIDTH, (0.5,) * WIDTH, 0.0, 1.0)
KEY = ("scripted", 1, "mlp", "eigenscore", 4)
CALIBRATE = "run seakr calibrate again or delete it"
RETRAIN = "run `seakr calibrate` again with state-probe among its --rules"
REBAND = "run `seakr calibrate` again with token-cascade among its --rules"
CASCADE = {"estimator": "min_token_prob", "band": [0.2, 0.8], "agreement": 0.9, "decided": 0.5}
EDITED = "the file was edited or corrupted"

Change = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Change:
    """A change that sets the field at a dotted path (``rules.state-probe.threshold``, ``steps.0.index``)."""

    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            data = data[int(part)] if isinstance(data, list) else data[part]
        if isinstance(data, list):
            data[int(last)] = value
        elif value is _DROP:
            del data[last]
        else:
            data[last] = value

    return change


_DROP = object()


def _drop(path: str) -> Change:
    return _set(path, _DROP)


# -- delta profiles and the probes inside them ----------------------------------------------------------------------
def _profile_file(root: Path, change: Change | None = None, *, cut: bool = False) -> Path:
    learned = {"state-probe": {"probe": PROBE.to_dict(), "threshold": 0.4}, "token-cascade": CASCADE}
    profile = DeltaProfile(*KEY, delta=1.5, objective="rate", target_rate=0.5, rules=learned)
    path = save_profile(profile, root)
    data = json.loads(path.read_text())
    if change is not None:
        change(data)
    text = json.dumps(data, indent=2)  # bare NaN where a change put one, as a hand edit would
    path.write_text(text[: len(text) // 2] if cut else text)
    return path


PROFILE_CASES = [
    # (kind of corruption, change, message fragments: the field, what it must be, what to do)
    ("cut", None, ["it is not JSON (it ends early: cut short?)", CALIBRATE]),
    ("wrong type", _set("k", "4"), ["field k holds str '4'", "from 0 to 256", CALIBRATE]),
    ("wrong type", _set("source", 3), ["field source holds int 3", "'mlp', 'residual'", CALIBRATE]),
    ("wrong type", _set("prompt", []), ["field prompt holds list", CALIBRATE]),
    ("missing field", _drop("delta"), ["the field 'delta' is missing", "a finite number", CALIBRATE]),
    ("NaN", _set("delta", math.nan), ["field delta holds NaN", "a finite number", CALIBRATE]),
    ("NaN", _set("target_rate", math.nan), ["field target_rate holds NaN", "[0, 1]", CALIBRATE]),
    ("huge", _set("k", 10**9), ["field k holds int 1000000000", "from 0 to 256", CALIBRATE]),
    ("huge", _set("layer", 10**9), ["field layer holds 1000000000", "the profile of layer=1", CALIBRATE]),
    ("unknown field", _set("deltaa", 1.0), ["the field 'deltaa' is not one a delta profile holds", CALIBRATE]),
    # what every rule's learned state shares: an object, a verdict if any
    ("rules: wrong type", _set("rules.state-probe", [1, 2]), ["field rules.state-probe holds list [1, 2]", CALIBRATE]),
    ("rules: wrong type", _set("rules.state-probe.verdict", 3), ["field rules.state-probe.verdict holds int 3"]),
    # the form before a rule's learned state went under ``rules``: refused, with what to do
    ("former form", _set("cascade", CASCADE), ["field cascade: an earlier seakr stored the token-cascade rule's "
     "learned state there, and profiles now keep each rule's under rules.<rule name>; run `seakr calibrate` again "
     "(with token-cascade among its --rules) to remake it"]),
    ("former form", _set("probe", {}), ["field probe: an earlier seakr stored the state-probe rule's", "again (with "
     "state-probe among its --rules)"]),
]  # fmt: skip

STATE = "rules.state-probe"
LEARNED_CASES = [
    # a rule's own state, checked when the rule reads it (``Rule.calibrated``): the state probe's
    ("wrong type", _set(f"{STATE}.threshold", "abc"), [f"field {STATE}.threshold holds str 'abc'", "[0, 1]", RETRAIN]),
    ("wrong type", _set(f"{STATE}.probe.weights", "x"), [f"field {STATE}.probe.weights holds str 'x'", RETRAIN]),
    ("wrong type", _set(f"{STATE}.probe.source", "attention"), [f"field {STATE}.probe.source", "'mlp'", RETRAIN]),
    ("missing field", _drop(f"{STATE}.threshold"), [f"the field '{STATE}.threshold' is missing", RETRAIN]),
    ("missing field", _drop(f"{STATE}.probe.bias"), [f"the field '{STATE}.probe.bias' is missing", RETRAIN]),
    ("NaN", _set(f"{STATE}.threshold", math.nan), [f"field {STATE}.threshold holds NaN", "[0, 1]", RETRAIN]),
    ("NaN", _set(f"{STATE}.probe.weights.3", math.nan), [f"field {STATE}.probe.weights[3] holds NaN", RETRAIN]),
    ("huge", _set(f"{STATE}.threshold", 5), [f"field {STATE}.threshold holds int 5", "[0, 1]", RETRAIN]),
    ("huge", _set(f"{STATE}.probe.width", 10**9), [f"field {STATE}.probe.width holds 1000000000", RETRAIN]),
    ("huge", _set(f"{STATE}.probe.scale.0", 0.0), [f"field {STATE}.probe.scale[0] holds float 0.0", RETRAIN]),
    ("wrong width", _set(f"{STATE}.probe.mean", [0.0] * 3), [f"{STATE}.probe.mean holds 3 numbers", RETRAIN]),
    # and the token cascade's
    ("missing field", _drop("rules.token-cascade.band"), ["the field 'rules.token-cascade.band' is missing", REBAND]),
    ("wrong order", _set("rules.token-cascade.band", [0.9, 0.1]), ["field rules.token-cascade.band holds", REBAND]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "change", "fragments"), PROFILE_CASES, ids=[f"{c[0]}: {c[2][0]}" for c in PROFILE_CASES]
)
def test_a_corrupt_profile_names_the_file_and_the_field(tmp_path, case, change, fragments):
    path = _profile_file(tmp_path, change, cut=case == "cut")
    with pytest.raises(ValueError) as raised:
        load_profile(*KEY, root=tmp_path)
    message = str(raised.value)
    assert message.startswith(f"{path}: not a valid delta profile: ")
    for fragment in fragments:
        assert fragment in message
    assert "could not convert" not in message and "KeyError" not in message


@pytest.mark.parametrize(
    ("case", "change", "fragments"), LEARNED_CASES, ids=[f"{c[0]}: {c[2][0]}" for c in LEARNED_CASES]
)
def test_a_corrupt_learned_state_names_the_file_and_the_field_when_its_rule_reads_it(tmp_path, case, change, fragments):
    path = _profile_file(tmp_path, change)
    profile = load_profile(*KEY, root=tmp_path)  # what no rule of a run reads is not refused
    with pytest.raises(ValueError) as raised:
        for rule in (StateProbe(), TokenCascade()):
            rule.calibrated(profile)
    message = str(raised.value)
    assert message.startswith(f"{path}: not a valid delta profile: ")
    for fragment in fragments:
        assert fragment in message
    assert "could not convert" not in message and "KeyError" not in message


def test_the_cli_says_which_file_and_field_instead_of_a_bare_key(tmp_path, monkeypatch, capsys):
    """The tester's case: ``seakr ask ... --rules default,state-probe --calibrated --profile-dir DIR`` with a profile
    whose probe lacks its threshold exited with the whole message ``seakr: error: 'threshold'``."""
    from fakes import ScriptedBackend
    from test_reasoner_components import eiffel

    import seakr_integrations.cli as cli
    from seakr_integrations.retrieval.bm25 import BM25Index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Eiffel Tower", "text": "It is in Paris, France."}) + "\n")
    BM25Index.build(str(corpus), str(tmp_path / "index"))
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: ScriptedBackend(eiffel))
    path = _profile_file(tmp_path / "profiles", _drop("rules.state-probe.threshold"))
    argv = ["ask", "Which country is the Eiffel Tower in?", "--index", str(tmp_path / "index"), "-k", "4"]
    argv += ["--rules", "default,state-probe", "--calibrated", "--profile-dir", str(tmp_path / "profiles")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "the field 'rules.state-probe.threshold' is missing" in err and RETRAIN in err
    assert "seakr: error: 'threshold'" not in err


# -- results headers -------------------------------------------------------------------------------------------------
def _results_file(path: Path, header: Change | None = None, record: Change | None = None, *, cut: str = "") -> Path:
    config = {"method": "seakr", "dataset": "q.jsonl", "seakr": SeaKRConfig.paper(k=4, delta=-1.0).to_dict()}
    head = {"format": FORMAT, "fingerprint": "0123456789abcdef", "config": config}
    trace = json.loads(_result().to_json())
    row = {"id": "q1", "prediction": "France", "em": 1.0, "f1": 1.0, "trace": trace}
    if header is not None:
        header(head)
    if record is not None:
        record(trace)
    lines = [json.dumps(head), json.dumps(row), json.dumps({**row, "id": "q2", "trace": None})]
    if cut == "header":
        lines[0] = lines[0][: len(lines[0]) // 2]
    if cut == "record":
        lines[1] = lines[1][: len(lines[1]) // 2]
    path.write_text("\n".join(lines) + "\n")
    return path


HEADER_CASES = [
    ("cut", None, read_results, ["line 1: not a JSON record", "repair or move that line"]),
    ("wrong type", _set("config", [1]), read_results, ["line 1 (the header): field config holds list [1]", EDITED]),
    ("wrong type", _set("fingerprint", 5), read_results, ["field fingerprint holds int 5", EDITED]),
    ("missing field", _drop("fingerprint"), read_results, ["the field 'fingerprint' is missing", EDITED]),
    ("NaN", _set("fingerprint", math.nan), read_results, ["field fingerprint holds NaN", EDITED]),
    ("NaN", _set("config.seakr.delta", math.nan), run_settings, ["field config.seakr.delta: delta=nan", EDITED]),
    ("wrong type", _set("config.seakr.k", "4"), run_settings, ["field config.seakr.k: k='4'", EDITED]),
    ("huge", _set("config.seakr.k", 10**9), run_settings, ["field config.seakr.k: k=1,000,000,000: at most 256"]),
    ("newer format", _set("format", "seakr-eval-results/2"), read_results,
     ["says format 'seakr-eval-results/2', and this release reads 'seakr-eval-results/1'", "upgrade"]),
    ("older settings", _drop("config.seakr.rules"), run_settings,
     ["its header predates the rules API", "field config.seakr holds no 'rules'", "run seakr eval with today's"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "change", "reader", "fragments"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES])
def test_a_corrupt_results_header_names_the_file_and_the_field(tmp_path, case, change, reader, fragments):
    path = _results_file(tmp_path / "run.jsonl", header=change, cut="header" if case == "cut" else "")
    with pytest.raises(ValueError) as raised:
        reader(path)
    message = str(raised.value)
    assert message.startswith(str(path))
    for fragment in fragments:
        assert fragment in message


def test_a_header_from_before_the_rules_api_says_so_not_did_you_mean():
    old = ROOT / "runs/signals/baselines/confirmation/2wiki_dev/cot.jsonl.gz"
    config, records = read_results(old)  # its results still read
    assert config["method"] == "cot" and next(records)["id"]
    with pytest.raises(ValueError) as raised:
        run_settings(old)
    message = str(raised.value)
    assert "predates the rules API" in message and "step_stop" in message and "did you mean" not in message


# -- traces in results records ---------------------------------------------------------------------------------------
TRACE_CASES = [
    ("cut", None, ["line 2: not a JSON record", "repair or move that line"]),
    ("wrong type", _set("steps.0", 1), ["field steps[0] holds int 1: it must be a step"]),
    ("wrong type", _set("finals", [1]), ["field finals holds list [1]"]),
    ("wrong type", _set("finals.knowledge.uncertainty", [1]), ["field finals.knowledge.uncertainty holds list [1]"]),
    ("wrong type", _set("steps.0.decision", "maybe"), ["field steps[0].decision holds str 'maybe'", "'retrieve'"]),
    ("missing field", _drop("steps.0.decision"), ["the field 'steps[0].decision' is missing"]),
    ("missing field", _drop("question"), ["the field 'question' is missing"]),
    ("NaN", _set("answer", math.nan), ["field answer holds NaN: it must be a string"]),
    ("NaN", _set("steps.0.index", math.nan), ["field steps[0].index holds NaN"]),
    ("huge", _set("steps.0.index", 10**9), ["field steps[0].index holds int 1000000000: it must be 0 (its position)"]),
    ("huge", _set("steps.0.uncertainty.num_samples", 10**9), ["steps[0].uncertainty.num_samples holds int 100000"]),
]


@pytest.mark.parametrize(("case", "change", "fragments"), TRACE_CASES, ids=[f"{c[0]}: {c[2][0]}" for c in TRACE_CASES])
def test_a_corrupt_trace_in_a_results_file_names_the_file_the_question_and_the_field(tmp_path, case, change, fragments):
    path = _results_file(tmp_path / "run.jsonl", record=change, cut="record" if case == "cut" else "")
    for reader in (read_results, lambda p: list(read_traces(p))):
        with pytest.raises(ValueError) as raised:
            reader(path)
        message = str(raised.value)
        assert message.startswith(str(path))
        if case != "cut":
            assert "question 'q1'" in message and "line 2, its trace (schema_version 2)" in message
            assert EDITED in message
        for fragment in fragments:
            assert fragment in message
        assert "AttributeError" not in message and "TypeError" not in message


def test_a_good_results_file_reads_whole(tmp_path):
    path = _results_file(tmp_path / "run.jsonl")
    assert read_header(path)["method"] == "seakr"
    assert run_settings(path) == SeaKRConfig.paper(k=4, delta=-1.0)
    (qid, trace), = read_traces(path)  # fmt: skip
    assert qid == "q1" and isinstance(trace, SeaKRResult) and trace.answer == _result().answer


def test_a_malformed_trace_read_alone_names_the_field_not_an_attribute_error():
    data = json.loads(_result().to_json())
    data["finals"]["knowledge"]["uncertainty"] = [1]
    with pytest.raises(ValueError, match=r"field finals\.knowledge\.uncertainty holds list \[1\]") as raised:
        SeaKRResult.from_dict(data)
    assert raised.value.path == "finals.knowledge.uncertainty"


# -- what the repository ships still reads ---------------------------------------------------------------------------
def test_every_shipped_profile_reads():
    paths = sorted(SHIPPED_PROFILES.glob("*.json"))
    assert len(paths) >= 12
    for path in paths:
        profile = read_profile(path)
        style, _, examples = path.stem.rpartition("__")[2].partition("-")
        config = SeaKRConfig(k=profile.k, exemplar_style=style, num_exemplars=int(examples.removesuffix("ex")))
        assert shipped_profile(profile.model, profile.layer, config) is not None


@pytest.mark.parametrize(
    "name",
    [
        "runs/loops/2wiki/single-retrieval.jsonl.gz",
        "runs/previous_default/hotpotqa_dev/with-state-probe.jsonl.gz",
        "runs/previous_default/2wiki_dev/seakr-previous-default.jsonl.gz",
    ],
)
def test_committed_results_files_still_read(name):
    path = ROOT / name
    config, records = read_results(path)
    assert run_settings(path) is not None and config["seakr"]["rules"] is not None
    assert sum(1 for _ in records) > 0 and sum(1 for _ in read_traces(path)) > 0


def test_a_gzipped_header_is_read_from_its_first_line(tmp_path):
    packed = tmp_path / "run.jsonl.gz"
    packed.write_bytes(gzip.compress(_results_file(tmp_path / "run.jsonl").read_bytes()))
    assert read_header(packed)["dataset"] == "q.jsonl"
