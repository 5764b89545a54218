"""The small corpus of the BM25 tests, how to write it, and an index of it (``built``, registered in
``conftest.py``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seakr_integrations.retrieval import BM25Index

CORPUS = [
    {"id": "pooh", "title": "Winnie-the-Pooh", "text": "Winnie-the-Pooh is a teddy bear created by A. A. Milne."},
    {"id": "piglet", "title": "Piglet", "text": "Piglet is a small pig and the best friend of Winnie-the-Pooh."},
    {"id": "cummings", "title": "Jim Cummings", "text": "Jim Cummings is an American voice actor who voiced Pooh."},
    {"id": "sonic", "title": "Sonic the Hedgehog", "text": "Sonic is a blue hedgehog, a video game character."},
    {"id": "paris", "title": "Paris", "text": "Paris is the capital and largest city of France."},
    {"id": "lyon", "title": "Lyon", "text": "Lyon is a city in France on the Rhone, known for its food."},
]


def write_jsonl(path: Path, rows: list[object], *, compress: bool = False) -> Path:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if compress:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def leftovers(parent: Path) -> list[str]:
    """Temporary directories a build may leave next to its output."""
    return sorted(p.name for p in parent.iterdir() if ".building-" in p.name or ".old-" in p.name)


@pytest.fixture
def built(tmp_path: Path) -> BM25Index:
    return BM25Index.build(write_jsonl(tmp_path / "corpus.jsonl", CORPUS), tmp_path / "index", progress=False)
