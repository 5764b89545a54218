"""A resumable bulk build of the Elasticsearch index SeaKR searches (the layout and its checks: ``es_mapping.py``;
the build's steps: docs/design/core.md)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from seakr_integrations.retrieval.corpus import CorpusSource, _indexer_input
from seakr_integrations.retrieval.es_connection import ElasticsearchConnection
from seakr_integrations.retrieval.es_errors import ElasticsearchBackendError, how_to_build
from seakr_integrations.retrieval.es_mapping import (
    DEFAULT_INDEX,
    DEFAULT_TEXT_FIELD,
    DEFAULT_TITLE_FIELD,
    META_KEY,
    check_index_name,
    index_status,
    mapping_body,
)

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

_BULK_TIMEOUT = 120.0  # seconds for one bulk request: a busy cluster can take far longer than for a search
_MAX_CHUNK_BYTES = 20 * 1024 * 1024  # Elastic's guidance: bulk requests of a few MB to a few tens of MB


@dataclass(frozen=True)
class IndexBuild:
    """The outcome of :func:`build_elasticsearch_index`.

    Attributes:
        index: The index name.
        url: The cluster (no credentials).
        added: Passages written by this run (new, or replaced with ``overwrite``).
        already_indexed: Passages that were in the index already and were left as they were (a resumed build).
        num_docs: Documents in the index at the end (all corpora it holds).
        seconds: Wall-clock time of the run.
        created: Whether this run created the index.
    """

    index: str
    url: str
    added: int
    already_indexed: int
    num_docs: int
    seconds: float
    created: bool

    @property
    def passages(self) -> int:
        """Passages of the corpus this run went through."""
        return self.added + self.already_indexed


def build_elasticsearch_index(
    documents: CorpusSource,
    index: str = DEFAULT_INDEX,
    *,
    connection: ElasticsearchConnection | None = None,
    url: str | None = None,
    title_field: str = DEFAULT_TITLE_FIELD,
    text_field: str = DEFAULT_TEXT_FIELD,
    shards: int = 1,
    replicas: int = 1,
    batch_size: int = 1000,
    overwrite: bool = False,
    progress: bool = True,
) -> IndexBuild:
    """Bulk-index a corpus into an Elasticsearch index, creating it with the BM25 mapping if needed; resumable.

    A passage the index already holds is left as it is (``already_indexed``), so rerunning after an interruption
    completes the index without duplicates; ``overwrite`` replaces same-id documents instead.  An existing index that
    seakr did not create is only added to.

    Args:
        documents: A corpus as :func:`~.corpus.read_corpus` takes it; ids must be unique.
        index: The index name (rules: :func:`check_index_name`).
        connection: Cluster settings; default ``ElasticsearchConnection.from_env(url)``.
        url: The cluster's URL when ``connection`` is not given.
        shards: Primary shards of a new index (see docs/scaling.md: one per ~10-50 GB).
        replicas: Replicas once the build is done (a new or seakr-built index).
        batch_size: Passages per bulk request.
        progress: Show a tqdm progress bar on stderr.

    Raises:
        FileNotFoundError: The corpus file does not exist (checked before contacting the cluster).
        ValueError: A bad corpus record (what was sent before stays indexed: fix it and rerun), index name or argument.
        MappingError: The index exists but lacks the fields (named).
        ElasticsearchBackendError: A passage was rejected, the final count is short, or another cluster error.
    """
    started = time.perf_counter()
    for name, value, low in (("shards", shards, 1), ("replicas", replicas, 0), ("batch_size", batch_size, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name}={value!r}: must be an integer >= {low}")
    if not title_field or not text_field or title_field == text_field:
        raise ValueError(f"title_field={title_field!r}, text_field={text_field!r}: give two different field names")
    check_index_name(index)
    records, source, corpus_name, total = _indexer_input(documents)
    conn = connection or ElasticsearchConnection.from_env(url)
    client = conn.client().options(request_timeout=max(conn.request_timeout, _BULK_TIMEOUT), retry_on_timeout=True)
    try:
        with conn.errors("check whether the index exists", index):
            exists = bool(client.indices.exists(index=index))
        if exists:
            ours = index_status(client, conn, index, title_field, text_field).seakr is not None
        else:
            body = mapping_body(title_field, text_field, shards=shards)
            body["mappings"]["_meta"][META_KEY].update(source=source, created=_now())
            with conn.errors("create the index", index):
                client.indices.create(index=index, **body)
            ours = True
        if ours:
            _set_loading(client, conn, index, loading=True)
            _set_meta(client, conn, index, complete=False, source=source)
        try:
            desc = f"indexing {corpus_name} into {index}"
            bar = tqdm(total=total, desc=desc, unit=" passages", disable=not progress, dynamic_ncols=True)
            added, existing = _bulk(client, conn, index, records, title_field, text_field, batch_size, overwrite, bar)
        finally:
            # Also on failure: what was indexed becomes searchable (the index stays marked incomplete); a failure
            # here must not hide the error that may be propagating.
            if ours:
                with contextlib.suppress(ElasticsearchBackendError):
                    _set_loading(client, conn, index, loading=False, replicas=replicas)
        with conn.errors("refresh the index", index):
            client.indices.refresh(index=index)
        with conn.errors("count documents", index):
            num_docs = int(client.count(index=index)["count"])
        if num_docs < added + existing:
            raise ElasticsearchBackendError(
                f"Elasticsearch index {index!r} at {conn.url} holds {num_docs} documents after the build, but the "
                f"corpus has {added + existing} passages (all acknowledged); run {how_to_build(conn.url, index)} "
                "again to complete it",
                conn.url,
            )
        if ours:
            _set_meta(client, conn, index, complete=True, source=source, num_docs=num_docs, completed=_now())
    finally:
        client.close()
    return IndexBuild(index, conn.url, added, existing, num_docs, time.perf_counter() - started, not exists)


def _bulk(
    client: Elasticsearch,
    conn: ElasticsearchConnection,
    index: str,
    records: Iterator[tuple[str, str, str]],
    title_field: str,
    text_field: str,
    batch_size: int,
    overwrite: bool,
    bar: tqdm,
) -> tuple[int, int]:
    """Send the records; ``(written, already indexed)``.  Stops at the first passage the cluster rejects."""
    from elasticsearch import helpers

    op = "index" if overwrite else "create"
    actions = (
        {"_op_type": op, "_index": index, "_id": pid, "_source": {title_field: title, text_field: text}}
        for pid, title, text in records
    )
    added = existing = 0
    with bar, conn.errors("bulk-index passages", index):
        for ok, item in helpers.streaming_bulk(
            client,
            actions,
            chunk_size=batch_size,
            max_chunk_bytes=_MAX_CHUNK_BYTES,
            raise_on_error=False,
            max_retries=3,  # per-document 429 (queue full) rejections, with exponential backoff from 2 s
            initial_backoff=2,
        ):
            result = item.get(op, {})
            if ok:
                added += 1
            elif result.get("status") == 409 or _error(result, "type") == "version_conflict_engine_exception":
                existing += 1
            else:
                raise ElasticsearchBackendError(
                    f"Elasticsearch index {index!r} at {conn.url} rejected passage {result.get('_id')!r} (HTTP "
                    f"{result.get('status')} {_error(result, 'type')}: {conn.scrub(_error(result, 'reason')[:300])}"
                    f"); {added + existing} passages were indexed before it; fix the cause and run "
                    f"{how_to_build(conn.url, index)} again to complete the index",
                    conn.url,
                )
            bar.update(1)
    return added, existing


def _error(result: Mapping[str, Any], part: str) -> str:
    """The ``type`` or ``reason`` of a rejected document's error (the whole error when it is not an object)."""
    error = result.get("error")
    return str(error.get(part, "") if isinstance(error, Mapping) else error or "")


def _set_loading(
    client: Elasticsearch, conn: ElasticsearchConnection, index: str, *, loading: bool, replicas: int = 0
) -> None:
    """Switch a seakr index between bulk loading (no refresh, no replicas) and serving (default refresh, replicas)."""
    # refresh_interval None: back to the cluster's default (1 s)
    settings = {"refresh_interval": "-1" if loading else None, "number_of_replicas": 0 if loading else replicas}
    with conn.errors("change the index settings", index):
        client.indices.put_settings(index=index, settings={"index": settings})


def _set_meta(client: Elasticsearch, conn: ElasticsearchConnection, index: str, **state: Any) -> None:
    """Merge ``state`` into the index's ``_meta.seakr`` (the mapping's ``_meta`` is replaced as a whole)."""
    with conn.errors("read the mapping", index):
        (body,) = client.indices.get_mapping(index=index).body.values()  # ``index`` is one concrete index
    meta = dict(body["mappings"].get("_meta") or {})
    meta[META_KEY] = {**(meta.get(META_KEY) or {}), **state}
    with conn.errors("update the index metadata", index):
        client.indices.put_mapping(index=index, meta=meta)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
