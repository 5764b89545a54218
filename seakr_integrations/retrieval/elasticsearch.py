"""SeaKR's retriever over an Elasticsearch cluster: the authors' BM25 query on the ``wiki`` index, at any scale (when
to prefer it to the embedded tantivy index: docs/design/core.md)."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from seakr_integrations.retrieval.background_loop import BackgroundLoop
from seakr_integrations.retrieval.es_connection import ElasticsearchConnection
from seakr_integrations.retrieval.es_errors import ElasticsearchBackendError
from seakr_integrations.retrieval.es_mapping import (
    DEFAULT_INDEX,
    DEFAULT_TEXT_FIELD,
    DEFAULT_TITLE_FIELD,
    IndexStatus,
    index_status,
    require_complete,
)
from seakr_integrations.retrieval.passage import Passage

if TYPE_CHECKING:
    from elasticsearch import AsyncElasticsearch, Elasticsearch

SearchResult = list[Passage] | BaseException


class ElasticsearchRetriever:
    """BM25 search over an Elasticsearch index; a core ``Retriever`` with sync, async and concurrent batch search.

    The query is SeaKR's and DRAGIN's: ``multi_match`` of ``best_fields`` type over title and text with
    ``tie_breaker`` 0.5; only the text goes to the LM.  Construction checks the cluster, the credentials and the
    index, so a problem is an error right away, not midway through a question.  Close the retriever (or use it as a
    context manager) to release its sync and asyncio clients, or let garbage collection do it.

    Args:
        index: Index, alias or pattern to search (default ``wiki``).
        title_field: The title field (matched, returned as ``Passage.title``).
        text_field: The passage-text field (matched, returned as ``Passage.text``).
        tie_breaker: ``multi_match`` tie breaker: how much the weaker field adds (SeaKR: 0.5).
        connection: Ready-made settings (then leave out ``settings``).
        check: Check the cluster and the index now (one request each for the mapping and the count).
        allow_incomplete: Search an index whose ``seakr index`` build has not finished.
        settings: The cluster, credentials and request policy (``url``, ``api_key``, ``username``, ``password``,
            ``request_timeout``, ``max_retries``, ...), as :meth:`ElasticsearchConnection.from_env` takes them.

    Raises:
        ValueError: Bad settings (no URL, half a basic-auth pair, ...) or arguments.
        ClusterUnreachableError: The cluster did not answer (within ``request_timeout``).
        AuthenticationError: The credentials were rejected (HTTP 401) or lack a privilege (403).
        IndexNotFoundError: The index does not exist; the message gives the ``seakr index`` command.
        MappingError: The index lacks a configured field or maps it as non-text (named).
        IncompleteIndexError: The index is a ``seakr index`` build that has not finished.
    """

    def __init__(
        self,
        index: str = DEFAULT_INDEX,
        *,
        title_field: str = DEFAULT_TITLE_FIELD,
        text_field: str = DEFAULT_TEXT_FIELD,
        tie_breaker: float = 0.5,
        connection: ElasticsearchConnection | None = None,
        check: bool = True,
        allow_incomplete: bool = False,
        **settings: Any,
    ) -> None:
        if not isinstance(index, str) or not index.strip():
            raise ValueError("index is empty: name the Elasticsearch index to search (SeaKR's default is 'wiki')")
        for name, value in (("title_field", title_field), ("text_field", text_field)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name}={value!r}: must name a field of the index")
        if title_field == text_field:
            raise ValueError(f"title_field and text_field are both {title_field!r}: give two different fields")
        if not isinstance(tie_breaker, (int, float)) or not 0.0 <= tie_breaker <= 1.0:
            raise ValueError(f"tie_breaker={tie_breaker!r}: must be between 0 and 1 (SeaKR uses 0.5)")
        if connection is None:
            connection = ElasticsearchConnection.from_env(**settings)
        elif any(v is not None for v in settings.values()):
            raise ValueError("pass either connection= or url/credentials/request_timeout/max_retries, not both")
        self.index = index
        self.title_field = title_field
        self.text_field = text_field
        self.tie_breaker = float(tie_breaker)
        self.connection = connection
        self._client: Elasticsearch = connection.client()
        self._async = _AsyncSide(connection)
        self._finalizer = weakref.finalize(self, _release, self._client, self._async)
        self.status: IndexStatus | None = None
        """What the construction check found (indices, document count, seakr build state); ``None`` unchecked."""
        if check:
            try:
                self.status = self.verify(allow_incomplete=allow_incomplete)
            except BaseException:
                self.close()
                raise

    def verify(self, *, allow_incomplete: bool = False) -> IndexStatus:
        """Check the cluster, the credentials, the index and its mapping now; return what was found.  Raises the
        constructor's errors."""
        status = index_status(self._client, self.connection, self.index, self.title_field, self.text_field)
        if not allow_incomplete:
            require_complete(status, self.connection.url)
        return status

    def count(self) -> int:
        """Documents in the index now."""
        with self.connection.errors("count documents", self.index):
            return int(self._client.count(index=self.index)["count"])

    def query_body(self, query: str, k: int = 3) -> dict[str, Any]:
        """The search request for ``query``; ``track_total_hits`` is off, as counting every match of a query full of
        common words costs more than finding the top k.

        Raises:
            TypeError: ``query`` is not a string.
            ValueError: ``query`` is empty or whitespace (a caller bug, not a search), or ``k`` < 1.
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if not query.strip():
            raise ValueError("query is empty: pass the text to search for")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k={k!r}: must be an integer >= 1")
        return {
            "size": k,
            "query": {
                "multi_match": {
                    "query": query,
                    "type": "best_fields",
                    "fields": [self.title_field, self.text_field],
                    "tie_breaker": self.tie_breaker,
                }
            },
            "_source": [self.title_field, self.text_field],
            "track_total_hits": False,
        }

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """Up to ``k`` best passages for ``query`` (plain text, analysed like the fields) by BM25 over title and text,
        best first: ``id`` from ``_id``, ``score`` from ``_score``.

        Raises:
            TypeError, ValueError: A bad ``query`` or ``k`` (see :meth:`query_body`).
            ElasticsearchBackendError: The search failed, or a hit has no text field (the message names both).
        """
        body = self.query_body(query, k)
        with self.connection.errors("search", self.index):
            response = self._client.search(index=self.index, **body)
        return self._passages(response)

    async def asearch(self, query: str, k: int = 3) -> list[Passage]:
        """:meth:`search` on the asyncio client; await it from any event loop."""
        return await self._async.loop.call(self._async_search(self.query_body(query, k)))

    @overload
    def search_many(
        self, queries: Sequence[str], k: int = 3, *, return_exceptions: Literal[False] = False
    ) -> list[list[Passage]]: ...

    @overload
    def search_many(
        self, queries: Sequence[str], k: int = 3, *, return_exceptions: Literal[True]
    ) -> list[SearchResult]: ...

    def search_many(
        self, queries: Sequence[str], k: int = 3, *, return_exceptions: bool = False
    ) -> list[list[Passage]] | list[SearchResult]:
        """:meth:`search` for every query, all at once on the asyncio client (about one round trip); results in order.
        Blocks the calling thread, which may be inside a running event loop.

        Args:
            return_exceptions: Put each failed search's exception (e.g. a bad query's ``ValueError``) in its slot.

        Raises:
            The errors of :meth:`search` (the first one, unless ``return_exceptions``).
        """
        queries = _query_list(queries)
        return self._async.loop.run(self._gather(queries, k, return_exceptions)) if queries else []

    async def asearch_many(
        self, queries: Sequence[str], k: int = 3, *, return_exceptions: bool = False
    ) -> list[list[Passage]] | list[SearchResult]:
        """:meth:`search_many` for async code: await it from any event loop."""
        queries = _query_list(queries)
        return await self._async.loop.call(self._gather(queries, k, return_exceptions)) if queries else []

    async def _gather(self, queries: list[str], k: int, return_exceptions: bool) -> list[Any]:
        async def one(query: str) -> list[Passage]:
            return await self._async_search(self.query_body(query, k))

        return list(await asyncio.gather(*(one(q) for q in queries), return_exceptions=return_exceptions))

    async def _async_search(self, body: dict[str, Any]) -> list[Passage]:
        client = self._async.client()
        with self.connection.errors("search", self.index):
            response = await client.search(index=self.index, **body)
        return self._passages(response)

    def _passages(self, response: Any) -> list[Passage]:
        passages = []
        for hit in response["hits"]["hits"]:
            source = hit.get("_source") or {}
            text, title = source.get(self.text_field), source.get(self.title_field)
            if isinstance(text, list):  # a multi-valued field: Elasticsearch matched all its values
                text = "\n".join(str(t) for t in text)
            if isinstance(title, list):
                title = " ".join(str(t) for t in title)
            if not isinstance(text, str) or not text.strip():
                raise ElasticsearchBackendError(
                    f"document {hit.get('_id')!r} of index {hit.get('_index', self.index)!r} at {self.connection.url} "
                    f"has no text in field {self.text_field!r}; set text_field to the field that holds the passage "
                    "text, or reindex the document",
                    self.connection.url,
                )
            title = title if isinstance(title, str) else ""
            passages.append(Passage(id=str(hit["_id"]), title=title, text=text, score=float(hit.get("_score") or 0.0)))
        return passages

    def close(self) -> None:
        """Close both clients and stop the background loop (idempotent)."""
        self._finalizer()

    def __enter__(self) -> ElasticsearchRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        """Documents in the index (one count request)."""
        return self.count()

    def __repr__(self) -> str:
        return (
            f"ElasticsearchRetriever(index={self.index!r}, url={self.connection.url!r}, "
            f"auth={self.connection.auth!r}, fields=({self.title_field!r}, {self.text_field!r}), "
            f"tie_breaker={self.tie_breaker:g})"
        )


class _AsyncSide:
    """The asyncio client and its loop, created on first use (apart, so the finaliser does not keep the retriever)."""

    def __init__(self, connection: ElasticsearchConnection) -> None:
        self.connection = connection
        self.loop = BackgroundLoop("seakr-elasticsearch")
        self._client: AsyncElasticsearch | None = None
        self._lock = threading.Lock()

    def client(self) -> AsyncElasticsearch:
        with self._lock:
            if self._client is None:
                self._client = self.connection.async_client()
            return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


def _release(client: Elasticsearch, side: _AsyncSide) -> None:
    try:
        client.close()
    finally:
        side.loop.close(side.aclose)


def _query_list(queries: Sequence[str]) -> list[str]:
    if isinstance(queries, str):
        raise TypeError("queries must be a list of strings; use search() for one query")
    return list(queries)
