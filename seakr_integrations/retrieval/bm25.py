"""The embedded BM25 retriever: a tantivy index on disk, built once from a corpus and memory-mapped for search
(SeaKR's BM25 scoring family in-process with no server, 0.6 ms a query at 200k passages: docs/benchmarks.md)."""

from __future__ import annotations

import json
import math
import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

import tantivy

from seakr_integrations.retrieval.bm25_build import (
    FORMAT_VERSION,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    SEARCH_FIELDS,
    build_index,
    how_to_build,
)
from seakr_integrations.retrieval.corpus import CorpusSource
from seakr_integrations.retrieval.passage import Passage, check_search

__all__ = ["FORMAT_VERSION", "MANIFEST_NAME", "SEARCH_FIELDS", "BM25Index"]

# Queries are plain text, as in SeaKR's Elasticsearch multi_match: they are never parsed as tantivy query language
# (LLM text is full of its syntax: field:, "phrase", (groups), [ranges], -not, ^boost, *, AND/OR).  They are cut
# into terms by the same analyzer as the indexed fields (tantivy's "default": split on non-alphanumeric characters,
# drop tokens of 40+ bytes, lower-case), and every term is looked up in both fields.
_ANALYZER = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .build()
)
_K1 = 1.2  # tantivy's BM25 k1 (fixed in tantivy, as is b = 0.75)
_COMMON_SHARE = 0.2
"""A query word matched by more than this share of the passages in a field is "common" for :meth:`BM25Index.search`:
such words (the, of, and, ...) have long posting lists and a low idf, so they are only scored on candidates."""


class BM25Index:
    """A read-only BM25 index of passages on disk; implements :class:`~seakr_integrations.retrieval.Retriever`.

    Scoring is tantivy's BM25 (k1 = 1.2, b = 0.75, Lucene's idf, times k1 + 1), summed over the query's distinct
    words and over ``title`` and ``text`` (Elasticsearch's ``most_fields``, where SeaKR uses ``best_fields``:
    docs/design/core.md).  A built index never changes, so one searcher is kept: to see a rebuilt index, open it again.

    Attributes:
        manifest: The parsed ``seakr-index.json`` (format version, number of passages, tantivy version, source
            corpus, creation time).

    Example:
        >>> index = BM25Index.build("corpus.jsonl", "index/")  # doctest: +SKIP
        >>> index.search("Who voiced Winnie the Pooh?", k=3)  # doctest: +SKIP
    """

    path: Path
    manifest: dict[str, Any]

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Open an index built by :meth:`build`.

        Raises:
            FileNotFoundError: ``path`` does not exist or is not a finished seakr index (no manifest); the message
                says how to build one.
            ValueError: The index was written by a newer, incompatible version, or its files do not match the
                manifest; rebuild it.
        """
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"no BM25 index at {path}: {how_to_build(path)}")
        manifest_path = path / MANIFEST_NAME
        if not manifest_path.is_file():
            raise FileNotFoundError(
                f"{path} is not a seakr BM25 index (it has no {MANIFEST_NAME}; an interrupted build never writes "
                f"one): {how_to_build(path)}"
            )
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(
                f"{manifest_path} cannot be read ({err}); rebuild the index: {how_to_build(path)}"
            ) from err
        if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"{manifest_path} is not a seakr BM25 manifest; rebuild the index: {how_to_build(path)}")
        if manifest.get("format_version", 0) > FORMAT_VERSION:
            raise ValueError(
                f"{path} was built by a newer seakr-integrations (index format {manifest.get('format_version')}, "
                f"this version reads {FORMAT_VERSION}): upgrade seakr-integrations or rebuild the index"
            )
        try:
            index = tantivy.Index.open(str(path))
        except Exception as err:
            raise ValueError(
                f"{path}: tantivy cannot open the index ({err}); it was built with tantivy "
                f"{manifest.get('tantivy', '?')}, this is {version('tantivy')}: rebuild it: {how_to_build(path)}"
            ) from err
        # Manual: no file watcher thread; the index is immutable, see the class docstring.
        index.config_reader(reload_policy="manual")
        searcher = index.searcher()
        if searcher.num_docs != manifest.get("num_docs"):
            raise ValueError(
                f"{path}: the index holds {searcher.num_docs} passages but its manifest says "
                f"{manifest.get('num_docs')}; its files were changed after the build: {how_to_build(path)}"
            )
        self.path = path
        self.manifest = manifest
        self._searcher = searcher
        self._schema = index.schema

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> BM25Index:
        """Open an index built by :meth:`build` (same as ``BM25Index(path)``)."""
        return cls(path)

    @classmethod
    def build(cls, documents: CorpusSource, out: str | os.PathLike[str], **options: Any) -> BM25Index:
        """Index a corpus into the directory ``out``, atomically, and open the result (``options``, what a failure
        leaves behind and the errors: :func:`~.bm25_build.build_index`)."""
        return cls(build_index(documents, out, **options))

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """Up to ``k`` best passages for ``query`` by BM25 over title and text, best first, ``score`` set.

        ``query`` is plain text: query-language syntax only separates words, so no query fails to parse.  Equal scores
        are ordered by id, so results do not depend on the index's segments.  The result is exact, usually found by
        :meth:`_search_pruned` (why: docs/benchmarks.md).  A bad ``query`` or ``k`` raises (:func:`.check_search`).
        """
        check_search(query, k)
        rare, common, bound = self._clauses(query)
        hits = self._search_pruned(rare, common, bound, k) if rare and common else None
        if hits is None:
            hits = self._search_exhaustive(rare + common, k)
        passages = [
            Passage(doc.get_first("id"), doc.get_first("title") or "", doc.get_first("text"), score)
            for score, doc in hits
        ]
        passages.sort(key=lambda p: (-p.score, p.id))
        return passages[:k]

    def _clauses(self, text: str) -> tuple[list[tantivy.Query], list[tantivy.Query], float]:
        """The query's term clauses (one per distinct word and field, unmatched ones dropped), split into rare and
        common (:data:`_COMMON_SHARE`), and ``bound``: the common ones add less to any score (a term's BM25 score is
        below ``idf * (k1 + 1)``)."""
        searcher, schema, term_query = self._searcher, self._schema, tantivy.Query.term_query
        num_docs = searcher.num_docs
        rare: list[tantivy.Query] = []
        common: list[tantivy.Query] = []
        bound = 0.0
        for term in dict.fromkeys(_ANALYZER.analyze(text)):
            for field in SEARCH_FIELDS:
                df = searcher.doc_freq(field, term)
                if df == 0:
                    continue
                clause = term_query(schema, field, term, index_option="freq")
                if df > _COMMON_SHARE * num_docs:
                    common.append(clause)
                    bound += (_K1 + 1) * math.log(1 + (num_docs - df + 0.5) / (df + 0.5))
                else:
                    rare.append(clause)
        # Margin for tantivy's float32 arithmetic: a larger bound only makes the pruned search give up more often.
        return rare, common, bound * 1.001 + 1e-3

    def _search_exhaustive(self, clauses: list[tantivy.Query], k: int) -> list[tuple[float, tantivy.Document]]:
        """``(score, document)`` of the top ``k`` for the OR of ``clauses``, and of every hit tied with the k-th."""
        if not clauses:
            return []
        searcher = self._searcher
        query = tantivy.Query.boolean_query([(tantivy.Occur.Should, clause) for clause in clauses])
        # One hit more than asked shows whether equal scores continue past the cut; only then fetch more, so the
        # whole group of hits tied with the k-th can be ordered by id.
        limit = k + 1
        while True:
            hits = searcher.search(query, limit, count=False).hits
            if len(hits) < limit or hits[-1][0] != hits[k - 1][0]:
                break
            limit *= 4
        if len(hits) > k:
            cut = hits[k - 1][0]
            hits = [h for h in hits if h[0] >= cut]
        return [(score, searcher.doc(address)) for score, address in hits]

    def _search_pruned(
        self, rare: list[tantivy.Query], common: list[tantivy.Query], bound: float, k: int
    ) -> list[tuple[float, tantivy.Document]] | None:
        """The exact top ``k`` (with ties) while scoring common clauses only on a few candidates; ``None`` if unproven
        (the steps: docs/design/retrieval.md)."""
        searcher, schema = self._searcher, self._schema
        should, must = tantivy.Occur.Should, tantivy.Occur.Must
        boolean_query, term_query = tantivy.Query.boolean_query, tantivy.Query.term_query
        limit = 4 * k + 38
        hits = searcher.search(boolean_query([(should, clause) for clause in rare]), limit, count=False).hits
        if len(hits) < k:
            return None
        floor = hits[k - 1][0]
        candidates = [address for score, address in hits if score + bound >= floor]
        if len(candidates) == limit:
            return None
        docs = {(a.segment_ord, a.doc): searcher.doc(a) for a in candidates}
        ids = [term_query(schema, "id", doc.get_first("id"), index_option="basic") for doc in docs.values()]
        query = tantivy.Query.const_score_query(boolean_query([(should, q) for q in ids]), 0.0)
        for clause in rare + common:
            query = boolean_query([(must, query), (should, clause)])
        exact = searcher.search(query, len(candidates), count=False).hits
        if len(exact) < k or exact[k - 1][0] <= bound:
            return None
        return [(score, docs[(a.segment_ord, a.doc)]) for score, a in exact]

    def __len__(self) -> int:
        """Number of passages in the index."""
        return self._searcher.num_docs

    def __repr__(self) -> str:
        return f"BM25Index({str(self.path)!r}, num_docs={len(self)})"
