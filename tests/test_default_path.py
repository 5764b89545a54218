"""A newcomer's default path on the real default models: calibrated out of the box, and the README's main job
answered right with a readable account of the decisions.

Slow: the main-job test runs the README's first command (``seakr ask``: Qwen2.5-Coder-0.5B on vLLM, the bundled
corpus) in a subprocess, as a newcomer would; the others load SmolLM2 (shared within the process), the in-process
classes' default.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from seakr_integrations.calibration import UncalibratedDeltaWarning, shipped_profile
from seakr_integrations.evaluation.scoring import score

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB_GOLD = ("Waimea Bay",)
"""The gold answer of the README's main-job question (HotpotQA dev, its two supporting passages in the bundled
corpus: "Butch Van Artsdalen" and "Waimea Bay, Hawaii")."""
PYTHON_WARNING = re.compile(r"\b\w+Warning: ")
"""A Python warning as the warnings module prints it (``UncalibratedDeltaWarning: ...``)."""
ENGINE_NOISE = re.compile(
    r"vllm|torch|triton|numa|membind|resource_tracker|leaked|^(INFO|WARNING|DEBUG)\b", re.I | re.M
)
"""A line of vLLM's, torch's or their processes' own (log lines, the C++ NUMA warning, multiprocessing's resource
tracker at shutdown): the command keeps them in its engine log unless ``-v`` is given."""

pytestmark = pytest.mark.slow


def main_job_arguments() -> list[str]:
    """The arguments of the README's first command after ``seakr`` (``ask "..."``)."""
    first = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert first, "the README's first code block is gone"
    words = shlex.split(first.group(1).split("&&")[-1])
    assert words[:2] == [".venv/bin/seakr", "ask"], f"the README's first code block runs no seakr ask: {words}"
    return words[1:]


def run_main_job(cwd: Path, *extra: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """The README's main job as a newcomer runs it, in ``cwd``, with ``extra`` arguments; its output printed."""
    run = subprocess.run(
        [sys.executable, "-m", "seakr_integrations.cli", *main_job_arguments(), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    print(run.stdout)
    return run


@pytest.mark.vllm
def test_the_main_job_finds_the_evidence_and_answers_right_without_a_warning_or_engine_noise(tmp_path):
    run = run_main_job(tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not PYTHON_WARNING.search(run.stderr), run.stderr[-3000:]
    assert not ENGINE_NOISE.search(run.stderr), run.stderr[-3000:]
    answer = re.search(r"^answer: (.*)$", run.stdout, re.M)
    assert answer and score(answer.group(1), MAIN_JOB_GOLD).f1 > 0.5, run.stdout
    assert re.search(r"^step 1: searched the question first -> kept ", run.stdout, re.M), run.stdout
    retrieved = (
        r"(uncertain \(U [-\d.]+ > delta [-\d.]+\)|it names something no kept passage backs"
        r"|unsure from its tokens .+?)"
    )
    assert re.search(rf"^step \d+: {retrieved} -> searched for ", run.stdout, re.M), run.stdout
    kept = {t for line in re.findall(r"-> kept (.+)$", run.stdout, re.M) for t in re.findall(r"'([^']+)'", line)}
    assert {"Butch Van Artsdalen", "Waimea Bay, Hawaii"} <= kept, run.stdout  # both supporting passages
    # the final answer says where it came from: the kept passages (the default), or the surer of two answers
    assert re.search(r"^answered from the passages it kept \(knowledge\)", run.stdout, re.M), run.stdout


def test_json_output_records_the_shipped_delta():
    from seakr_integrations.backends.loading import shared_backend
    from seakr_integrations.demo import demo_index
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig

    backend = shared_backend("hf", "smollm2")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedDeltaWarning)
        seakr = SeaKR(backend, demo_index(progress=False))
    expected = shipped_profile(backend.model_name, backend.resolve_layer(None), SeaKRConfig())
    assert expected is not None and seakr.config.delta == expected.delta
    assert json.loads(json.dumps(seakr.config.to_dict()))["delta"] == expected.delta


def test_both_adapters_default_path_is_calibrated_without_a_warning():
    from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRChain
    from llamaindex_seakr import PassageRetriever, SeaKRLLM, SeaKRQueryEngine
    from seakr_integrations.demo import demo_index
    from seakr_integrations.reasoning import SeaKRConfig

    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedDeltaWarning)
        chain = SeaKRChain(retriever=PassageIndexRetriever.demo(), llm=ChatSeaKR())
        langchain_loop = chain.seakr(None)
        engine = SeaKRQueryEngine(PassageRetriever(demo_index(progress=False)), SeaKRLLM()).seakr
        light = SeaKRQueryEngine(PassageRetriever(demo_index(progress=False)), SeaKRLLM(), SeaKRConfig.light()).seakr
    assert langchain_loop.profile is not None and engine.profile == langchain_loop.profile
    assert langchain_loop.config.delta == langchain_loop.profile.delta
    assert light.profile is not None and light.profile.k == 10
    assert chain.seakr(None) is langchain_loop  # the loop is kept: a resolved delta is not a changed config
