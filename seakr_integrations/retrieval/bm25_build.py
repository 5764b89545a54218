"""Building the embedded BM25 index: a corpus written into a tantivy index on disk, atomically (the manifest is
written last and the result swapped into place, so a directory with a manifest is always a complete index).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import tantivy
from tqdm import tqdm

from seakr_integrations.build_folders import BUILDING, OLD, build_lock
from seakr_integrations.retrieval.corpus import CorpusSource, _indexer_input

MANIFEST_NAME = "seakr-index.json"
"""The file that marks a directory as a finished seakr BM25 index (written last by a build)."""

FORMAT_VERSION = 1
"""Version of the index layout (schema + manifest); bumped when an older reader could misread a newer index."""

SEARCH_FIELDS = ("title", "text")
"""Fields a query is matched against (SeaKR's Elasticsearch index searches ``title`` and ``txt``)."""

MANIFEST_FORMAT = "seakr-bm25"
"""The manifest's ``format``: what tells a seakr BM25 index apart from any other directory with a JSON file."""


def _schema() -> tantivy.Schema:
    """``id``: stored, untokenized; ``title``/``text``: default tokenizer, stored, frequencies but no positions
    (queries are bags of words; 14% smaller: docs/benchmarks.md)."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("title", stored=True, tokenizer_name="default", index_option="freq")
    builder.add_text_field("text", stored=True, tokenizer_name="default", index_option="freq")
    return builder.build()


def how_to_build(path: Path) -> str:
    """The end of an error message about a missing or unusable index at ``path``: how to build one."""
    return f"build one with `seakr index CORPUS.jsonl --out {path}` or `BM25Index.build('CORPUS.jsonl', '{path}')`"


def build_index(
    documents: CorpusSource,
    out: str | os.PathLike[str],
    *,
    progress: bool = True,
    overwrite: bool = True,
    memory_budget_mb: int = 512,
    threads: int | None = None,
) -> Path:
    """Index a corpus into the directory ``out``, atomically; returns ``out`` as an absolute path (``BM25Index.build``
    calls this and opens the result).  Any failure (a bad corpus line, a full disk, Ctrl-C) leaves ``out`` as it was;
    what a killed build could not delete is removed by the next build of ``out`` (docs/design/core.md).

    Args:
        documents: A corpus as :func:`~.corpus.iter_passages` takes it; ids must be unique.
        out: The index directory: missing (parents created), empty, or a seakr index (replaced with ``overwrite``).
        progress: Show a tqdm progress bar on stderr.
        overwrite: Replace an existing index at ``out``; when False an existing ``out`` is an error.
        memory_budget_mb: Indexing memory shared by the writer threads (at least 15 MB each).
        threads: Writer threads; ``None`` uses up to 4, one per CPU core (parsing runs in the calling thread).

    Raises:
        ValueError: No passages, an invalid record (its line or item), or a bad ``memory_budget_mb`` or ``threads``.
        FileExistsError: ``out`` exists and ``overwrite`` is False, or is not a seakr index (it is never deleted).
        FileNotFoundError: The corpus file does not exist.
    """
    out = Path(os.path.abspath(out))  # "index/" and "." get a real name and parent; symlinks are not followed
    threads = min(4, os.cpu_count() or 1) if threads is None else threads
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads={threads!r}: must be an integer >= 1 (or None for one per core, up to 4)")
    if memory_budget_mb < 15 * threads:
        raise ValueError(
            f"memory_budget_mb={memory_budget_mb}: tantivy needs at least 15 MB per writer thread "
            f"({15 * threads} MB for {threads}); give more memory or fewer threads"
        )
    records, source, corpus_name, total = _indexer_input(documents)
    _check_replaceable(out, overwrite)
    with build_lock(out):  # removes what interrupted builds of `out` left, if no build is running
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.{BUILDING}-", dir=out.parent))
        try:
            num_docs = _write_index(
                tmp,
                records,
                threads=threads,
                heap_bytes=memory_budget_mb * 1_000_000,
                progress=progress,
                total=total,
                desc=f"indexing {corpus_name}",
            )
            if num_docs == 0:
                raise ValueError(f"{source}: the corpus has no passages; an index needs at least one")
            manifest = {
                "format": MANIFEST_FORMAT,
                "format_version": FORMAT_VERSION,
                "num_docs": num_docs,
                "fields": {"id": "raw", "title": "default tokenizer, freq", "text": "default tokenizer, freq"},
                "search_fields": list(SEARCH_FIELDS),
                "tantivy": version("tantivy"),
                "source": source,
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            with open(tmp / MANIFEST_NAME, "w", encoding="utf-8") as fh:  # synced: its presence promises a whole index
                json.dump(manifest, fh, indent=2)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            _swap_into_place(tmp, out, overwrite)
        except BaseException:
            _remove_dir(tmp)
            raise
    return out


def _check_replaceable(out: Path, overwrite: bool) -> None:
    """Refuse to build into ``out`` when that would destroy something that is not a seakr index."""
    if not (out.exists() or out.is_symlink()):
        return
    if not overwrite:
        raise FileExistsError(f"{out} already exists; pass overwrite=True to replace it, or choose another output")
    if out.is_symlink():
        raise FileExistsError(
            f"{out} is a symbolic link; refusing to replace it: build into the directory it points to instead"
        )
    if out.is_dir() and ((out / MANIFEST_NAME).is_file() or not any(out.iterdir())):
        return
    raise FileExistsError(
        f"{out} exists and is not a seakr index (no {MANIFEST_NAME}); refusing to replace it: choose another "
        "output directory, or remove it yourself if it is disposable"
    )


def _write_index(
    directory: Path,
    records: Iterator[tuple[str, str, str]],
    *,
    threads: int,
    heap_bytes: int,
    progress: bool,
    total: int | None,
    desc: str,
) -> int:
    """Index ``records`` into the empty ``directory``; returns the number of passages.  On any exception the writer
    is rolled back and its threads joined first, so none writes into the directory the caller deletes."""
    index = tantivy.Index(_schema(), path=str(directory), reuse=False)
    writer = index.writer(heap_size=heap_bytes, num_threads=threads)
    document, add = tantivy.Document, writer.add_document
    count = 0
    try:
        with tqdm(records, total=total, desc=desc, unit=" passages", file=sys.stderr, disable=not progress) as bar:
            for pid, title, text in bar:
                add(document(id=pid, title=title, text=text))
                count += 1
        if count:
            writer.commit()
        writer.wait_merging_threads()  # merges must end before the directory is renamed
    except BaseException:
        with contextlib.suppress(Exception):  # already consumed or failed: the caller deletes the directory anyway
            writer.rollback()
            writer.wait_merging_threads()
        raise
    return count


def _swap_into_place(new: Path, out: Path, overwrite: bool) -> None:
    """Rename the finished index ``new`` to ``out``, moving an existing index aside first and deleting it after (or
    back, if the rename fails), so ``out`` holds either the old or the new index."""
    _check_replaceable(out, overwrite)  # again: ``out`` may have appeared or changed during the build
    old: Path | None = None
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    elif out.exists():
        old = out.parent / f".{out.name}.{OLD}-{uuid.uuid4().hex[:8]}"
        os.replace(out, old)
    try:
        os.replace(new, out)
    except BaseException:
        if old is not None:
            os.replace(old, out)
        raise
    if old is not None:
        _remove_dir(old)


def _remove_dir(path: Path, attempts: int = 6) -> None:
    """Delete the directory ``path``, retrying while tantivy's garbage collection (which can outlive the writer)
    still writes into it; one that remains is reported with a warning."""
    for attempt in range(attempts):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        if attempt < attempts - 1:  # no wait after the last try: nothing follows but the warning
            time.sleep(0.01 * 2**attempt)
    warnings.warn(f"could not delete the temporary directory {path}; delete it by hand", RuntimeWarning, stacklevel=2)
