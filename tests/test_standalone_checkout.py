"""The repository stands on its own: a copy of its tracked files in an empty folder, with nothing beside it, reads
its question files and corpora from its own ``data/``, and no tracked file points at a folder outside it.

Quick (seconds, no model): the copy is made with plain file copies and probed in a subprocess that only resolves
the short dataset names and reads the files, recording every file the process opens.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = "../" + "shared"
"""The folder beside the checkout the data used to come from (spelt in two parts so that this file is no match)."""
LEFT_OUT = ("docs/archive/", "runs/")
"""Archived reports and run records may say where their files were when they were made."""

PROBE = """
import json, os, sys

opened = []
sys.addaudithook(lambda event, args: opened.append(os.path.abspath(os.fsdecode(args[0])))
                 if event == "open" and isinstance(args[0], (str, bytes)) else None)

import seakr_integrations
from seakr_integrations.cli import build_parser
from seakr_integrations.cli.questions import load_questions
from seakr_integrations.retrieval.corpus import read_corpus

found = {"package": seakr_integrations.__file__, "datasets": {}}
for command, name in (("eval", "hotpotqa"), ("calibrate", "2wiki"), ("eval", "nq_open")):
    args = build_parser().parse_args([command, "--dataset", name, "-q"])
    questions = load_questions(args)
    found["datasets"][name] = {
        "questions": len(questions),
        "dataset": args.dataset,
        "corpus": args.corpus,
        "passages": sum(1 for _ in read_corpus(args.corpus)) if args.corpus else None,
    }
found["wiki_summaries"] = sum(1 for _ in read_corpus("data/wiki_summaries_en.jsonl.gz"))
found["opened"] = opened
print(json.dumps(found))
"""


def _tracked() -> list[str]:
    """The repository's tracked files (``git ls-files``), as a clone would hold them."""
    if not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout, so there is no list of tracked files to check")
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in done.stdout.decode().split("\0") if name]


def _inside(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_a_copy_of_the_checkout_reads_its_data_from_inside_itself(tmp_path: Path):
    clone = tmp_path / "clone"
    for name in _tracked():
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is simply not copied
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, clone / name)
    env = {key: value for key, value in os.environ.items() if not key.startswith("SEAKR_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=clone,
        env={**env, "PYTHONPATH": str(clone)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)

    assert _inside(found["package"], clone), f"the copy imported the package from {found['package']}"
    datasets = found["datasets"]
    assert {name: d["questions"] for name, d in datasets.items()} == {"hotpotqa": 300, "2wiki": 300, "nq_open": 300}
    assert {name: d["passages"] for name, d in datasets.items()} == {"hotpotqa": 2950, "2wiki": 2137, "nq_open": None}
    assert found["wiki_summaries"] == 10033
    for name, d in datasets.items():
        assert _inside(d["dataset"], clone / "data") and Path(d["dataset"]).name == f"{name}_dev.jsonl"
        assert d["corpus"] is None or _inside(d["corpus"], clone / "data")

    # Nothing was read from the original checkout (its venv, which runs the probe, aside) or from beside it.
    venv = Path(sys.prefix)
    reached = [p for p in found["opened"] if _inside(p, ROOT) and not _inside(p, venv)]
    reached += [p for p in found["opened"] if _inside(p, ROOT / OUTSIDE)]
    assert not reached, f"the copy opened files of the original checkout or beside it: {sorted(set(reached))[:10]}"
    data_files = [p for p in found["opened"] if Path(p).name.endswith((".jsonl", ".jsonl.gz"))]
    assert data_files and all(_inside(p, clone / "data") for p in data_files), data_files


def test_no_tracked_file_points_outside_the_repository():
    offenders = []
    for name in _tracked():
        if name.startswith(LEFT_OUT) or not (ROOT / name).is_file():
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary (gzip data, images): no paths to check
            continue
        offenders += [f"{name}:{i}: {line.strip()}" for i, line in enumerate(text.splitlines(), 1) if OUTSIDE in line]
    assert not offenders, (
        f"{len(offenders)} line(s) of tracked files point at {OUTSIDE}, outside the repository; use the repository's "
        "data/ (or the short dataset names hotpotqa, 2wiki, nq_open in seakr commands):\n" + "\n".join(offenders)
    )
