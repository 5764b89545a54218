"""A killed index build leaves its working folder behind; the next build of the same index removes it, but only
folders of that index, and only when no other build in the directory is running."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from seakr_integrations.retrieval import BM25Index

ROWS = [
    {"id": f"p{i}", "title": f"Passage {i}", "text": f"Passage number {i} is about topic {i % 7}."} for i in range(50)
]

HANGING_BUILD = """
import sys, time
from seakr_integrations.retrieval import BM25Index

def rows():
    for i in range(20):
        yield {"id": f"p{i}", "title": "t", "text": "some text " * 50}
    print("writing", flush=True)
    time.sleep(600)  # killed here, mid-build

BM25Index.build(rows(), sys.argv[1], progress=False)
"""


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def _hidden(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_a_killed_builds_folder_is_removed_by_the_next_build(tmp_path, caplog):
    out = tmp_path / "index"
    child = subprocess.Popen(
        [sys.executable, "-c", HANGING_BUILD, str(out)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert child.stdout.readline().strip() == "writing"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
    (left,) = _hidden(tmp_path)
    assert left.startswith(".index.building-")
    with caplog.at_level(logging.WARNING, logger="seakr.build"):
        index = BM25Index.build(_corpus(tmp_path), out, progress=False)
    assert _hidden(tmp_path) == []
    assert index.search("topic", k=1)
    assert "removed 1 folder(s)" in caplog.text and left in caplog.text and str(out) in caplog.text


def test_only_this_index_s_folders_are_removed(tmp_path):
    for name in (".index.building-aaaa1111", ".index.old-bbbb2222", ".other.building-cccc3333", ".index.keep"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "segment").write_bytes(b"x" * 1000)
    (tmp_path / ".index.building-file").write_text("a file, not a build folder")
    BM25Index.build(_corpus(tmp_path), tmp_path / "index", progress=False)
    assert _hidden(tmp_path) == [".index.building-file", ".index.keep", ".other.building-cccc3333"]


def test_nothing_is_removed_while_another_build_runs_in_the_directory(tmp_path):
    stale = tmp_path / ".index.building-aaaa1111"
    stale.mkdir()
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # what a running build holds
        started = time.monotonic()
        BM25Index.build(_corpus(tmp_path), tmp_path / "index", progress=False)
        assert time.monotonic() - started < 60  # a running build does not block another
    finally:
        os.close(fd)
    assert stale.is_dir()
    BM25Index.build(_corpus(tmp_path), tmp_path / "index", progress=False)  # now no build runs: it goes
    assert not stale.exists()
