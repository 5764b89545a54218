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
from seakr_integrations.backends.stream import GenerationStream
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


_Resume = tuple[QuestionState, Program, Any, Exception | None]
"""A program ready to go on: what to send it (a value, or an error to throw into it)."""

_FinishedSearch = tuple[QuestionState, Program, Future]
"""A search whose future is done, with the question and program that started it."""


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
        pool = DaemonPool(min(self.max_in_flight, SEARCH_THREADS))  # an abandoned search never blocks exit
        flight = _Flight(self.backend.stream(), pool, self.retriever)
        try:
            while True:
                flight.start(itertools.islice(waiting, self.max_in_flight - len(flight.alive)))
                if flight.ready:
                    for item in flight.advance(*flight.ready.popleft()):
                        if isinstance(item, SeaKREvent):
                            log_progress(item.question_index, item)
                        yield item
                    continue
                if not flight.alive:
                    return
                flight.wait()
        finally:
            flight.close()


class _Flight:
    """One ``Driver.run``'s programs in flight: the model calls and searches they wait on, and those whose results
    are back (``ready``), so the run's loop only says in which order things happen."""

    def __init__(self, stream: GenerationStream, pool: DaemonPool, retriever: Retriever | None) -> None:
        self.stream = stream
        self.pool = pool
        self.retriever = retriever
        self.alive: dict[int, Program] = {}  # id(program) -> program, started and not finished
        self.ready: deque[_Resume] = deque()
        self.listeners: dict[Call, list[tuple[_Waiting, int]]] = {}  # identical calls in flight are generated once
        self.tickets: dict[int, Call] = {}
        self.searches: queue.SimpleQueue[_FinishedSearch] = queue.SimpleQueue()
        self.searching = 0
        self.deadlines: dict[Future, tuple[float, QuestionState, Program, Search]] = {}  # searches with a time limit
        self.abandoned: set[Future] = set()  # timed out: their late results are dropped

    def start(self, programs: Iterable[tuple[QuestionState, Program]]) -> None:
        """Take ``programs`` in flight, each ready for its first step."""
        for state, program in programs:
            self.alive[id(program)] = program
            self.ready.append((state, program, None, None))

    def advance(self, state: QuestionState, program: Program, value: Any, error: Exception | None) -> list[Any]:
        """Advance one program to its next request and dispatch it; returns what it emitted."""
        out: list[Any] = []
        state.outbox = out
        try:
            request = program.send(value) if error is None else program.throw(error)
        except StopIteration as done:
            del self.alive[id(program)]
            return [*out, Answered(state, done.value)]
        except Exception as failure:
            del self.alive[id(program)]
            return [*out, Failed(state, failure)]
        if isinstance(request, Search):
            self._start_search(state, program, request)
        elif isinstance(request, Generate) and request.calls:
            self._submit(_Waiting(state, program, [None] * len(request.calls), len(request.calls)), request.calls)
        else:
            self.ready.append((state, program, None, TypeError(f"a program yielded {request!r}: not a request")))
        return out

    def wait(self) -> None:
        """Wait for one engine step (or one batch), or, with nothing to generate, for a search or the first search's
        time limit; then make ready every program whose results are back or whose search ran out of time."""
        done: list[_FinishedSearch] = []
        if self.stream.pending:  # searches finish meanwhile on their threads
            self._collect_calls()
        elif self.searching:
            done.extend(self._wait_for_search())
        else:  # pragma: no cover - every live program waits on a call or a search
            raise RuntimeError("the driver has live questions but nothing in flight")
        while not self.searches.empty():
            done.append(self.searches.get())
        self._abandon_late_searches()
        self._finish_searches(done)

    def close(self) -> None:
        """End the run: the engine's stream, the searches still running, and every program still in flight."""
        self.stream.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        for program in self.alive.values():
            program.close()

    def _submit(self, w: _Waiting, calls: tuple[Call, ...]) -> None:
        """Send each call to the engine at once; an identical call already in flight is shared."""
        for slot, call in enumerate(calls):
            if call in self.listeners:
                self.listeners[call].append((w, slot))
                continue
            try:
                ticket = self.stream.submit(*call)
            except Exception as refused:  # a bad prompt fails its own question only
                self._deliver(w, slot, refused)
                continue
            self.listeners[call] = [(w, slot)]
            self.tickets[ticket] = call

    def _deliver(self, w: _Waiting, slot: int, result: SelfAwareOutput | Exception) -> None:
        """Give one call's result to a waiting program, which is ready once all its calls are back."""
        if w.put(slot, result):
            self.ready.append((w.state, w.program, w.outputs, w.error))

    def _start_search(self, state: QuestionState, program: Program, request: Search) -> None:
        """Start one search on the pool, in the program's context; its future comes back through ``searches``."""
        self.searching += 1
        future = self.pool.submit(contextvars.copy_context().run, _search, state.observer, self.retriever, request)
        if request.timeout is not None:
            self.deadlines[future] = (time.monotonic() + request.timeout, state, program, request)
        future.add_done_callback(lambda f: self.searches.put((state, program, f)))

    def _collect_calls(self) -> None:
        """One engine step: hand each finished call's result to every program waiting on it."""
        for ticket, result in self.stream.collect():
            for w, slot in self.listeners.pop(self.tickets.pop(ticket), []):
                self._deliver(w, slot, result)

    def _wait_for_search(self) -> list[_FinishedSearch]:
        """Wait for a search to finish, or for the first search's time limit; returns the one that finished."""
        first = min((d for d, *_ in self.deadlines.values()), default=None)
        try:
            return [self.searches.get(timeout=None if first is None else max(0.0, first - time.monotonic()))]
        except queue.Empty:
            return []

    def _abandon_late_searches(self) -> None:
        """Give up each running search past its time limit: its program is ready with ``timed_out``'s error."""
        for future, (deadline, state, program, request) in list(self.deadlines.items()):
            if future.done() or time.monotonic() < deadline:
                continue
            del self.deadlines[future]
            self.abandoned.add(future)
            self.searching -= 1
            self.ready.append((state, program, None, timed_out(request.query, request.timeout)))

    def _finish_searches(self, done: list[_FinishedSearch]) -> None:
        """Make each finished search's program ready with its passages or its error; an abandoned one's is dropped."""
        for state, program, future in done:
            self.deadlines.pop(future, None)
            if future in self.abandoned:
                self.abandoned.discard(future)
                continue
            self.searching -= 1
            error = future.exception()
            if error is not None and not isinstance(error, Exception):
                raise error  # an interrupt inside a search: not a search failure
            self.ready.append((state, program, None if error else future.result(), error))  # type: ignore[arg-type]


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
