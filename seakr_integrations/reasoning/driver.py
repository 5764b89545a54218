"""The streaming driver: many question programs at once, each going on as soon as its own results are back, so
no question waits for another's slowest sample or search.  A program's failure ends its question alone
(``Failed``); an interrupt cancels everything in flight (``docs/design/reasoning.md``).
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.reasoning.events import Observer, SeaKREvent
from seakr_integrations.reasoning.progress import log_progress
from seakr_integrations.reasoning.search_pool import DaemonPool, timed_out
from seakr_integrations.reasoning.state import Call, Generate, Program, QuestionState, Search
from seakr_integrations.retrieval.passage import Retriever

SEARCH_THREADS = 8
"""Searches running at once at most (an Elasticsearch client's default connection pool holds 10)."""


@dataclass(frozen=True)
class Answered:
    """A program returned ``value``."""

    state: QuestionState
    value: Any


@dataclass(frozen=True)
class Failed:
    """A program failed with ``error``; the other questions went on."""

    state: QuestionState
    error: Exception


@dataclass(eq=False)
class _Waiting:
    state: QuestionState
    program: Program
    outputs: list[SelfAwareOutput | None]
    left: int
    error: Exception | None = None

    def put(self, slot: int, result: SelfAwareOutput | Exception) -> bool:
        """Record one call's result; True when every call is back."""
        if isinstance(result, Exception):
            self.error = self.error or result
        else:
            self.outputs[slot] = result
        self.left -= 1
        return self.left == 0


class Driver:
    """Runs question programs over one back-end's ``stream()`` and one retriever (searched through each question's
    ``Observer.search``), ``max_in_flight`` questions at once (their calls share the engine's batches)."""

    def __init__(self, backend: SelfAwareBackend, retriever: Retriever | None, max_in_flight: int) -> None:
        if not isinstance(max_in_flight, int) or isinstance(max_in_flight, bool) or max_in_flight < 1:
            raise ValueError(f"max_in_flight={max_in_flight!r}: must be an integer >= 1")
        self.backend = backend
        self.retriever = retriever
        self.max_in_flight = max_in_flight

    def run(self, programs: Iterable[tuple[QuestionState, Program]]) -> Iterator[SeaKREvent | Answered | Failed]:
        """Run ``programs``; yields each program's events as they happen and its ``Answered`` or ``Failed`` end."""
        waiting = iter(programs)
        alive: dict[int, Program] = {}  # id(program) -> program, started and not finished
        ready: deque[tuple[QuestionState, Program, Any, Exception | None]] = deque()
        listeners: dict[Call, list[tuple[_Waiting, int]]] = {}  # identical calls in flight are generated once
        tickets: dict[int, Call] = {}
        searches: queue.SimpleQueue[tuple[QuestionState, Program, Future]] = queue.SimpleQueue()
        searching = 0
        deadlines: dict[Future, tuple[float, QuestionState, Program, Search]] = {}  # searches with a time limit
        abandoned: set[Future] = set()  # timed out: their late results are dropped
        pool = DaemonPool(min(self.max_in_flight, SEARCH_THREADS))  # an abandoned search never blocks exit
        stream = self.backend.stream()

        def submit(w: _Waiting, calls: tuple[Call, ...]) -> None:
            """Send each call to the engine at once; an identical call already in flight is shared."""
            for slot, call in enumerate(calls):
                if call in listeners:
                    listeners[call].append((w, slot))
                    continue
                try:
                    ticket = stream.submit(*call)
                except Exception as refused:  # a bad prompt fails its own question only
                    if w.put(slot, refused):
                        ready.append((w.state, w.program, w.outputs, w.error))
                    continue
                listeners[call] = [(w, slot)]
                tickets[ticket] = call

        def send(state: QuestionState, program: Program, value: Any, error: Exception | None) -> list[Any]:
            """Advance one program to its next request and dispatch it; returns what it emitted."""
            nonlocal searching
            out: list[Any] = []
            state.outbox = out
            try:
                request = program.send(value) if error is None else program.throw(error)
            except StopIteration as done:
                del alive[id(program)]
                return [*out, Answered(state, done.value)]
            except Exception as failure:
                del alive[id(program)]
                return [*out, Failed(state, failure)]
            if isinstance(request, Search):
                searching += 1
                future = pool.submit(contextvars.copy_context().run, _search, state.observer, self.retriever, request)
                if request.timeout is not None:
                    deadlines[future] = (time.monotonic() + request.timeout, state, program, request)
                future.add_done_callback(lambda f: searches.put((state, program, f)))
            elif isinstance(request, Generate) and request.calls:
                submit(_Waiting(state, program, [None] * len(request.calls), len(request.calls)), request.calls)
            else:
                ready.append((state, program, None, TypeError(f"a program yielded {request!r}: not a request")))
            return out

        try:
            while True:
                for state, program in itertools.islice(waiting, self.max_in_flight - len(alive)):
                    alive[id(program)] = program
                    ready.append((state, program, None, None))
                if ready:
                    for item in send(*ready.popleft()):
                        if isinstance(item, SeaKREvent):
                            log_progress(item.question_index, item)
                        yield item
                    continue
                if not alive:
                    return
                done: list[tuple[QuestionState, Program, Future]] = []
                if stream.pending:  # one engine step (or one batch); searches finish meanwhile on their threads
                    for ticket, result in stream.collect():
                        for w, slot in listeners.pop(tickets.pop(ticket), []):
                            if w.put(slot, result):
                                ready.append((w.state, w.program, w.outputs, w.error))
                elif searching:
                    first = min((d for d, *_ in deadlines.values()), default=None)
                    try:  # nothing to generate: wait for a search, or for the first search's time limit
                        done.append(searches.get(timeout=None if first is None else max(0.0, first - time.monotonic())))
                    except queue.Empty:
                        pass
                else:  # pragma: no cover - every live program waits on a call or a search
                    raise RuntimeError("the driver has live questions but nothing in flight")
                while not searches.empty():
                    done.append(searches.get())
                for future, (deadline, state, program, request) in list(deadlines.items()):
                    if future.done() or time.monotonic() < deadline:
                        continue
                    del deadlines[future]
                    abandoned.add(future)
                    searching -= 1
                    ready.append((state, program, None, timed_out(request.query, request.timeout)))
                for state, program, future in done:
                    deadlines.pop(future, None)
                    if future in abandoned:
                        abandoned.discard(future)
                        continue
                    searching -= 1
                    error = future.exception()
                    if error is not None and not isinstance(error, Exception):
                        raise error  # an interrupt inside a search: not a search failure
                    ready.append((state, program, None if error else future.result(), error))  # type: ignore[arg-type]
        finally:
            stream.close()
            pool.shutdown(wait=False, cancel_futures=True)
            for program in alive.values():
                program.close()


def _search(observer: Observer, retriever: Retriever | None, request: Search) -> Any:
    """One search, on a pool thread, through the question's observer (which may route it through a framework)."""
    if retriever is None:
        raise ValueError("this program searched, but no retriever was given")
    results = observer.search(retriever, request.query, request.k)
    if results is None or isinstance(results, (str, bytes, dict)) or not isinstance(results, Iterable):
        raise TypeError(
            f"the retriever {type(retriever).__name__} returned {type(results).__name__} for a search: "
            "search(query, k) must return a list of Passage objects (an empty list when nothing matches)"
        )
    return list(results)
