"""Searches run concurrently: ``SeaKR.answer_many`` sends each question's search to the retriever as soon as the
question issues it, on the driver's search threads, and ``ElasticsearchRetriever.search_many`` runs a list of
searches concurrently on its asyncio client.

The loop's side is tested with the scripted back-end of ``fakes.py``; the retriever's side against a local stub
that answers like Elasticsearch after a delay and records how many requests it served at once (the emulator would
do, but concurrency must be shown the same way against any server).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from es_server import StubServer
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, final, is_step, parse

from seakr_integrations.reasoning import RetrievalError, SeaKR
from seakr_integrations.reasoning.events import Observer
from seakr_integrations.retrieval import ElasticsearchRetriever, Passage

QUESTIONS = ["Alpha question?", "Beta question?", "Gamma question?"]


def respond(prompt, config):
    """Every question is unsure at first, retrieves once, then answers from its passage."""
    question, context, _ = parse(prompt)
    if not is_step(config):
        return final(f"So the answer is {question[:5]}")
    if not context:
        return Reply(f"Unsure about {question}", spread=1.0)
    return Reply(f"So the answer is {question[:5]}", spread=0.2)


def by_last_word(query: str) -> list[Passage]:
    return [passage(query.split()[-1])]


class SlowRetriever(FakeRetriever):
    """A FakeRetriever whose searches take ``delay`` seconds; records how many ran at once.  ``failing`` queries get
    an error."""

    def __init__(self, *args, delay: float = 0.2, failing: Sequence[str] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.delay = delay
        self.failing = set(failing)
        self.running = 0
        self.peak = 0
        self._lock = threading.Lock()

    def search(self, query, k=3):
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            time.sleep(self.delay)
            if any(word in query for word in self.failing):
                raise ConnectionError(f"shard failed for {query!r}")
            return super().search(query, k)
        finally:
            with self._lock:
                self.running -= 1


def test_searches_of_many_questions_run_at_once_and_change_nothing_else():
    slow = SlowRetriever(default=by_last_word)
    started = time.perf_counter()
    together = SeaKR(ScriptedBackend(respond), slow, CONFIG).answer_many(QUESTIONS)
    elapsed = time.perf_counter() - started
    assert slow.peak == 3 and len(slow.queries) == 3  # each search went out as soon as its question issued it
    assert elapsed < 3 * slow.delay  # a functional check of overlap, generous on a busy machine (0.2 s each)
    plain = FakeRetriever(default=by_last_word)
    expected = SeaKR(ScriptedBackend(respond), plain, CONFIG).answer_many(QUESTIONS)
    assert [r.to_dict() for r in together] == [r.to_dict() for r in expected]
    assert [r.passages[0].id for r in together] == ["question", "question", "question"]


def test_events_of_each_question_keep_their_order():
    seakr = SeaKR(ScriptedBackend(respond), SlowRetriever(default=by_last_word, delay=0.01), CONFIG)
    events = list(seakr.iter_events(QUESTIONS))
    alone = [
        e.kind
        for e in SeaKR(ScriptedBackend(respond), FakeRetriever(default=by_last_word), CONFIG).iter_events(QUESTIONS[:1])
    ]
    for i in range(3):
        assert [e.kind for e in events if e.question_index == i] == alone


def test_a_failed_search_affects_only_its_question():
    results = SeaKR(
        ScriptedBackend(respond),
        SlowRetriever(default=by_last_word, failing=["Beta"]),
        CONFIG,
        on_retrieval_error="answer_without",
    ).answer_many(QUESTIONS)
    assert [r.stop_reason for r in results][1] == "retrieval error"
    assert results[1].steps[0].error.startswith("ConnectionError: shard failed for ")
    assert [bool(r.passages) for r in results] == [True, False, True]
    slow = SlowRetriever(default=by_last_word, failing=["Beta"])
    with pytest.raises(RetrievalError, match=r"'Beta question\?'.*ConnectionError: shard failed") as raised:
        SeaKR(ScriptedBackend(respond), slow, CONFIG).answer_many(QUESTIONS)
    others = raised.value.results  # the other questions' answers are not lost
    assert [type(r).__name__ for r in others] == ["SeaKRResult", "RetrievalError", "SeaKRResult"]


def test_observers_that_search_themselves_search_on_the_search_threads_with_the_callers_context():
    import contextvars

    run_id = contextvars.ContextVar("run_id", default=None)

    class Routing(Observer):
        def __init__(self) -> None:
            self.searched: list[tuple[str, str | None, str]] = []

        def search(self, retriever, query, k):
            self.searched.append((query, run_id.get(), threading.current_thread().name))
            return retriever.search(query, k)

    observers = [Routing(), None, None]
    token = run_id.set("run-1")
    try:
        events = list(
            SeaKR(ScriptedBackend(respond), FakeRetriever(default=by_last_word), CONFIG).iter_events(
                QUESTIONS, observers=observers
            )
        )
    finally:
        run_id.reset(token)
    ((query, seen, thread),) = observers[0].searched  # through the adapter's hook
    assert query == "Unsure Alpha question" or query.startswith("Unsure")
    assert seen == "run-1" and thread.startswith("seakr-search")
    assert sum(e.kind == "question_answered" for e in events) == 3


# ---------------------------------------------------------------------------------------------- the real retriever
class SlowCluster:
    """Answers every ``_search`` like Elasticsearch after ``delay`` seconds; counts requests served at once."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.in_flight = 0
        self.most = 0
        self.lock = threading.Lock()

    def __call__(self, method, path, headers, body):
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            time.sleep(self.delay)
            query = json.loads(body)["query"]["multi_match"]["query"]
            word = query.split()[-1]
            hit = {"_index": "wiki", "_id": word, "_score": 1.5, "_source": {"title": word, "txt": f"text of {word}"}}
            return 200, {"took": 1, "timed_out": False, "hits": {"hits": [hit]}}, {}
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture
def slow_cluster() -> Iterator[tuple[SlowCluster, str]]:
    cluster = SlowCluster(delay=0.4)
    with StubServer(cluster) as server:
        yield cluster, server.url


def test_search_many_runs_the_searches_concurrently(slow_cluster):
    cluster, url = slow_cluster
    with ElasticsearchRetriever(url=url, check=False) as retriever:
        queries = [f"query {i}" for i in range(8)]
        started = time.monotonic()
        results = retriever.search_many(queries, k=1)
        elapsed = time.monotonic() - started
    assert [r[0].id for r in results] == [str(i) for i in range(8)]  # in order
    assert results[0][0] == Passage("0", "0", "text of 0", 1.5)
    assert cluster.most == 8 and elapsed < 8 * cluster.delay / 2, f"{elapsed:.2f} s, at most {cluster.most} at once"


def test_answer_many_over_elasticsearch_searches_concurrently(slow_cluster):
    cluster, url = slow_cluster
    with ElasticsearchRetriever(url=url, check=False) as retriever:
        results = SeaKR(ScriptedBackend(respond), retriever, CONFIG).answer_many(QUESTIONS)
    assert cluster.most == 3  # the three questions' searches were in flight together
    assert [r.passages[0].id for r in results] == ["question", "question", "question"]
    assert [r.answer for r in results] == ["Alpha", "Beta", "Gamma"]


async def test_async_searches_from_a_running_event_loop(slow_cluster):
    cluster, url = slow_cluster
    with ElasticsearchRetriever(url=url, check=False) as retriever:
        one = await retriever.asearch("about x", k=1)
        many = await retriever.asearch_many(["a", "b", "c"], k=1)
        blocking = retriever.search_many(["d"], k=1)  # a sync call inside a running loop still works (it blocks)
    assert [p.id for p in one] == ["x"] and [r[0].id for r in many] == ["a", "b", "c"] and blocking[0][0].id == "d"
    assert cluster.most == 3


def test_close_stops_the_background_thread(slow_cluster):
    _, url = slow_cluster
    retriever = ElasticsearchRetriever(url=url, check=False)
    retriever.search_many(["a", "b"], k=1)
    assert any(t.name == "seakr-elasticsearch" for t in threading.enumerate())
    retriever.close()
    retriever.close()  # idempotent
    assert not any(t.name == "seakr-elasticsearch" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(RuntimeError, match="is closed"):
        retriever.search_many(["a", "b"])
