"""The search of a stand-alone gate (the adapters' gated retrievers and the agent middleware), with the loop's search
settings: ``search_timeout`` (the same daemon thread and error as the driver's searches, ``search_pool``) and
``on_retrieval_error`` (raise, naming what failed; or go on without the passages, the error kept for the
decision)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.calls import RetrievalError, RetrievalErrorPolicy
from seakr_integrations.reasoning.search_pool import asearch_within, search_within

__all__ = ["agate_search", "gate_search"]

T = TypeVar("T")


def gate_search(
    search: Callable[[], Any],
    query: str,
    *,
    what: str,
    search_timeout: float | None,
    on_retrieval_error: RetrievalErrorPolicy,
    why: str = "",
    check: Callable[[Any], list[T]] = list,
) -> tuple[list[T], str | None]:
    """``search()``'s results (read by ``check``) and ``None``; or, when the search failed, returned something
    ``check`` refuses, or took longer than ``search_timeout``, ``[]`` and the error in words
    (``on_retrieval_error="answer_without"``).

    Args:
        search: The search for ``query``.
        what: The retriever in words, for the error (``"the retriever search"``).
        why: Added after the query in the error (``" (the model was unsure, so it had to search)"``).
        check: The results as a list, or a ``TypeError`` saying what the retriever returned and must return.

    Raises:
        RetrievalError: The search failed and ``on_retrieval_error`` is ``"raise"``; the message names ``what``,
            the query and the cause, and says how to go on without it.
    """
    try:
        return check(search_within(search, search_timeout, query)), None
    except Exception as exc:
        return [], _failed(exc, query, what, why, on_retrieval_error)


async def agate_search(
    search: Awaitable[Any],
    query: str,
    *,
    what: str,
    search_timeout: float | None,
    on_retrieval_error: RetrievalErrorPolicy,
    why: str = "",
    check: Callable[[Any], list[T]] = list,
) -> tuple[list[T], str | None]:
    """``gate_search`` for an async search, awaited on the running event loop (``asearch_within``)."""
    try:
        return check(await asearch_within(search, search_timeout, query)), None
    except Exception as exc:
        return [], _failed(exc, query, what, why, on_retrieval_error)


def _failed(exc: Exception, query: str, what: str, why: str, on_retrieval_error: RetrievalErrorPolicy) -> str:
    """The failure in words, or the ``RetrievalError`` that reports it (``on_retrieval_error="raise"``)."""
    message = f"{type(exc).__name__}: {exc}"
    if on_retrieval_error == "raise":
        raise RetrievalError(
            f"{what} failed for query {quoted(query)}{why}: {message}; pass on_retrieval_error='answer_without' "
            "to go on without the passages"
        ) from exc
    return message
