"""Iterate a blocking generator from async code without blocking the event loop.

The SeaKR loop is synchronous (it drives a model); workflows are async and stream what happens as it happens.  A
dedicated thread runs the generator and hands each item to the event loop as soon as it exists, so events stream
live, other coroutines (other runs, the server) keep going, and an abandoned iteration stops the thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any, TypeVar

__all__ = ["iterate_in_thread"]

T = TypeVar("T")
_DONE = object()


async def iterate_in_thread(
    factory: Callable[[threading.Event], Iterator[T]], name: str = "seakr"
) -> AsyncGenerator[T, None]:
    """Yield the items of ``factory(stop)`` as a worker thread produces them.

    Args:
        factory: Builds the iterator in the worker thread; ``stop`` is set when the consumer goes away (an error,
            a cancelled task), so the iterator can end early (the thread also stops between items).
        name: Thread name, for debugging.

    Raises:
        Whatever the iterator raises, in the consumer.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[Any, BaseException | None]] = asyncio.Queue()
    stop = threading.Event()

    def put(item: Any, error: BaseException | None = None) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, (item, error))
        except RuntimeError:  # the event loop is closed: nobody is listening any more
            stop.set()

    def work() -> None:
        try:
            iterator = factory(stop)
            try:
                for item in iterator:
                    if stop.is_set():
                        break
                    put(item)
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
        except BaseException as exc:
            put(_DONE, exc)
        else:
            put(_DONE)

    context = contextvars.copy_context()  # instrumentation spans and tags follow the work into the thread
    thread = threading.Thread(target=context.run, args=(work,), name=name, daemon=True)
    thread.start()
    try:
        while True:
            item, error = await queue.get()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
