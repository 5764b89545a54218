"""An asyncio event loop on a daemon thread, so synchronous code can run coroutines concurrently (why one long-lived
loop owns the async client: docs/design/core.md)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    """An event loop running on a daemon thread, started on first use and stopped by :meth:`close`.

    Thread-safe: any thread may call :meth:`run`, any event loop may await :meth:`call`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _loop_for(self, coro: Coroutine[Any, Any, Any]) -> asyncio.AbstractEventLoop:
        """The loop, started if need be; ``coro`` is closed if there is none (so it is never left un-awaited)."""
        try:
            with self._lock:
                if self._closed:
                    raise RuntimeError(f"{self.name} is closed; create a new retriever")
                if self._loop is None:
                    loop = asyncio.new_event_loop()
                    ready = threading.Event()

                    def serve() -> None:
                        asyncio.set_event_loop(loop)
                        loop.call_soon(ready.set)
                        loop.run_forever()

                    self._thread = threading.Thread(target=serve, name=self.name, daemon=True)
                    self._thread.start()
                    ready.wait()
                    self._loop = loop
                return self._loop
        except BaseException:
            coro.close()
            raise

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (blocking the calling thread).

        Raises:
            RuntimeError: Called from the loop's own thread (it would wait for itself forever).
        """
        loop = self._loop_for(coro)
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(f"{self.name}: run() was called from its own thread; await call() instead")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. Ctrl-C while waiting: do not leave the work running
            raise

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` run on the loop, from any event loop (cancelling the caller cancels it there too)."""
        loop = self._loop_for(coro)
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def close(self, cleanup: Callable[[], Coroutine[Any, Any, None]] | None = None, timeout: float = 10.0) -> None:
        """Run ``cleanup()`` on the loop (e.g. closing the async client), then stop the loop and join the thread.

        Idempotent; safe to call from a finaliser at interpreter exit.  A close from the loop's own thread only
        schedules the stop.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:
            loop.call_soon(loop.stop)
            return
        if cleanup is not None and loop.is_running():
            # The loop is going away anyway; a failed close must not hide the caller's error.
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(cleanup(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()
