"""The threads searches run on: daemon threads, unlike ``ThreadPoolExecutor``'s, so a hung search abandoned after
``search_timeout`` never holds up the process at exit (``docs/design/reasoning.md``).  The driver runs a pool of
them; ``search_within`` runs one search of a stand-alone gate (the adapters' gates and agent middleware) the same
way, with the same time limit and the same error."""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from seakr_integrations.quoting import quoted

T = TypeVar("T")


def timed_out(query: str, timeout: float) -> TimeoutError:
    """The error of a search abandoned after ``timeout`` seconds."""
    return TimeoutError(
        f"the search for {quoted(query)} took longer than search_timeout={timeout:g} s and was abandoned: raise "
        "search_timeout (SeaKR(..., search_timeout=...), the component's search_timeout, --search-timeout), or "
        "check that the retriever answers"
    )


def search_within(search: Callable[[], T], timeout: float | None, query: str) -> T:
    """``search()`` (the search for ``query``), given up after ``timeout`` seconds (``None``: waited for) with
    ``timed_out``'s ``TimeoutError``.  It runs on a daemon thread in the caller's context (callbacks follow it);
    a hung search is abandoned there, not killed."""
    if timeout is None:
        return search()
    pool = DaemonPool(1, name="seakr-gate-search")
    try:
        future = pool.submit(contextvars.copy_context().run, search)
        try:
            return future.result(timeout=timeout)
        except TimeoutError:
            if future.done():  # the search's own TimeoutError (a client's), not the time limit
                raise
            raise timed_out(query, timeout) from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


async def asearch_within(search: Awaitable[T], timeout: float | None, query: str) -> T:
    """``search_within`` for an async search, awaited on the running event loop (where its resources live) and
    cancelled after ``timeout`` seconds with ``timed_out``'s ``TimeoutError``."""
    task = asyncio.ensure_future(search)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        raise timed_out(query, timeout)  # type: ignore[arg-type]  # a timeout is set when the wait can end undone
    return task.result()


class DaemonPool:
    """``submit`` and ``shutdown`` as ``ThreadPoolExecutor`` has them, on at most ``max_workers`` daemon threads
    (started as work arrives)."""

    def __init__(self, max_workers: int, name: str = "seakr-search") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers={max_workers!r}: must be >= 1")
        self.max_workers = max_workers
        self.name = name
        self._work: queue.SimpleQueue[tuple[Future, Callable[..., Any], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for work
        self._queued = 0  # work no thread has taken yet
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        """Run ``fn(*args)`` on a pool thread; its future."""
        future: Future = Future()
        thread = None
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit a search to a pool that was shut down")
            self._work.put((future, fn, args))
            self._queued += 1
            if self._queued > self._idle and len(self._threads) < self.max_workers:
                thread = threading.Thread(target=self._serve, name=f"{self.name}-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
        if thread is not None:  # started outside the lock, so it takes the work at once (as the executor's do)
            thread.start()
        return future

    def shutdown(self, wait: bool = False, cancel_futures: bool = True) -> None:
        """Stop taking work; cancel what has not started (``cancel_futures``), and let each thread end once its
        current search returns (``wait``: wait for them, which a hung search would make for ever)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in threads:
            self._work.put(None)
        if wait:
            for thread in threads:
                thread.join()

    def _serve(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            item = self._work.get()
            with self._lock:
                self._idle -= 1
                self._queued -= item is not None
            if item is None:
                return
            future, fn, args = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as error:  # handed to whoever waits on the future, as the executor does
                    future.set_exception(error)
                else:
                    future.set_result(result)
