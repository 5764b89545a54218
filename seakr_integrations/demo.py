"""The embedded defaults: a bundled demo corpus whose BM25 index is built on first use in the cache directory, so
that ``seakr ask "..."`` runs on a fresh install with no other argument.
"""

from __future__ import annotations

import hashlib
import os
from importlib.resources import files
from pathlib import Path

from seakr_integrations.evaluation.questions import Question, read_questions
from seakr_integrations.models import cache_dir
from seakr_integrations.retrieval.bm25 import MANIFEST_NAME, BM25Index

__all__ = ["cached_index", "demo_corpus_path", "demo_index", "demo_questions", "demo_questions_path"]


def demo_corpus_path() -> Path:
    """The bundled corpus: 5,087 HotpotQA and 2WikiMultihopQA paragraphs (see ``data/README.md`` for licenses)."""
    return Path(str(files("seakr_integrations") / "data" / "demo_corpus.jsonl.gz"))


def demo_index(*, progress: bool = True, root: Path | None = None) -> BM25Index:
    """The demo corpus's BM25 index, built under ``<cache>/indexes/`` the first time it is asked for."""
    return cached_index(demo_corpus_path(), progress=progress, root=root, name="demo")


def cached_index(
    corpus: str | os.PathLike[str], *, progress: bool = True, root: Path | None = None, name: str | None = None
) -> BM25Index:
    """The BM25 index of a corpus file, built under ``<cache>/indexes/`` the first time it is asked for.

    The directory is named after the file's content hash, so an index is never paired with a corpus it was not
    built from, and an interrupted first build (atomic) is simply redone on the next call.
    """
    corpus = Path(corpus)
    if not corpus.is_file():
        raise FileNotFoundError(f"corpus {corpus} does not exist (expected a JSONL file of passages)")
    digest = hashlib.sha256(corpus.read_bytes()).hexdigest()[:16]
    stem = name or corpus.name.split(".")[0]
    path = (root or cache_dir() / "indexes") / f"{stem}-{digest}"
    if not (path / MANIFEST_NAME).is_file():
        return BM25Index.build(corpus, path, progress=progress)
    return BM25Index.open(path)


def demo_questions_path() -> Path:
    """The bundled labelled questions: 10 HotpotQA and 10 2WikiMultihopQA dev questions whose paragraphs are in
    the demo corpus (see ``data/README.md``)."""
    return Path(str(files("seakr_integrations") / "data" / "demo_questions.jsonl.gz"))


def demo_questions() -> list[Question]:
    """The bundled labelled questions (HotpotQA first, then 2Wiki), for examples and notebooks."""
    return read_questions(demo_questions_path()).questions
