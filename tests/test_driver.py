"""The streaming driver: each question goes on as soon as its own results are back; one question's failure never
costs another's answer.

A scripted back-end whose stream behaves like an engine: each submitted prompt needs some number of steps (set by
the test) and ``collect`` runs one step, so a call's duration is exact and no clock is involved.
"""

from __future__ import annotations

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, final, is_step, parse

from seakr_integrations.backends.stream import GenerationStream
from seakr_integrations.evaluation.methods import make_method
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.results import ResultsFile
from seakr_integrations.evaluation.runner import evaluate
from seakr_integrations.reasoning import QuestionAnswered, QuestionFailed, RetrievalError, SeaKR
from seakr_integrations.reasoning.baselines import SingleRetrieval


class SteppedStream(GenerationStream):
    """Each prompt finishes after ``steps(prompt)`` calls of ``collect``; records what ran in every step."""

    def __init__(self, backend: SteppedBackend) -> None:
        self.backend = backend
        self.left: dict[int, int] = {}
        self.calls: dict[int, tuple[str, object]] = {}
        self.next = 0

    def submit(self, prompt, config):
        ticket, self.next = self.next, self.next + 1
        self.left[ticket] = self.backend.steps(prompt)
        self.calls[ticket] = (prompt, config)
        self.backend.log.append(("submit", parse(prompt)[0]))
        return ticket

    @property
    def pending(self):
        return len(self.left)

    def collect(self):
        self.backend.in_flight.append({parse(p)[0] for t, (p, _) in self.calls.items() if t in self.left})
        for t in self.left:
            self.left[t] -= 1
        done = [t for t, n in self.left.items() if n <= 0]
        finished = []
        for t in done:
            del self.left[t]
            prompt, config = self.calls.pop(t)
            try:
                finished.append((t, self.backend.generate([prompt], config)[0]))
            except Exception as error:
                finished.append((t, error))
            self.backend.log.append(("done", parse(prompt)[0]))
        return finished

    def cancel(self, tickets=None):
        for t in list(self.left) if tickets is None else list(tickets):
            self.left.pop(t, None)
            self.backend.cancelled.append(t)


class SteppedBackend(ScriptedBackend):
    def __init__(self, respond, steps) -> None:
        super().__init__(respond)
        self.steps = steps
        self.log: list[tuple[str, str]] = []
        self.in_flight: list[set[str]] = []
        self.cancelled: list[int] = []

    def stream(self):
        return SteppedStream(self)


def two_steps(prompt, config):
    """An uncertain first step, a search, then the answer from the passage."""
    question, context, _ = parse(prompt)
    if not is_step(config):
        return final(f"So the answer is {question.split()[0]}")
    if not context:
        return Reply(f"Unsure about {question}", spread=1.0)
    return Reply(f"So the answer is {question.split()[0]}", spread=0.2)


RETRIEVER = FakeRetriever(default=lambda q: [passage(q.split()[-1])])


def test_a_fast_question_finishes_before_a_slow_one_without_waiting_for_it():
    slow_steps = {"Slow": 30, "Fast": 1}
    backend = SteppedBackend(two_steps, lambda prompt: slow_steps[parse(prompt)[0].split()[0]])
    seakr = SeaKR(backend, RETRIEVER, CONFIG)
    finished = [e.question for e in seakr.iter_events(["Slow one?", "Fast one?"]) if isinstance(e, QuestionAnswered)]
    assert finished == ["Fast one?", "Slow one?"]
    fast_done = max(i for i, entry in enumerate(backend.log) if entry == ("done", "Fast one?"))
    slow_first_done = backend.log.index(("done", "Slow one?"))
    assert fast_done < slow_first_done  # the fast question's every call ran while the slow one's first was running
    # and the answers are those of each question alone
    alone = [SeaKR(ScriptedBackend(two_steps), RETRIEVER, CONFIG).answer(q) for q in ("Slow one?", "Fast one?")]
    together = seakr.answer_many(["Slow one?", "Fast one?"])
    assert [r.to_dict() for r in together] == [r.to_dict() for r in alone]


@pytest.mark.parametrize("max_in_flight", [1, 2, 3])
def test_max_in_flight_questions_at_a_time(max_in_flight):
    backend = SteppedBackend(two_steps, lambda prompt: 1 + len(parse(prompt)[0]) % 3)
    questions = [f"Q{i} question?" for i in range(7)]
    results = SeaKR(backend, RETRIEVER, CONFIG).answer_many(questions, max_in_flight=max_in_flight)
    assert [r.answer for r in results] == [f"Q{i}" for i in range(7)]
    assert max(len(step) for step in backend.in_flight) == max_in_flight


def test_a_failing_question_does_not_cost_the_others_their_answers():
    def failing_search(query):
        if "Beta" in query:
            raise ConnectionError("index offline")
        return [passage(query.split()[-1])]

    questions = ["Alpha question?", "Beta question?", "Gamma question?"]
    seakr = SeaKR(ScriptedBackend(two_steps), FakeRetriever(default=failing_search), CONFIG)
    results = seakr.answer_many(questions, return_exceptions=True)
    assert isinstance(results[1], RetrievalError) and "index offline" in str(results[1])
    assert [results[0].answer, results[2].answer] == ["Alpha", "Gamma"]

    with pytest.raises(RetrievalError, match="index offline") as raised:
        seakr.answer_many(questions)  # the default raises, once the others have finished
    assert [type(r).__name__ for r in raised.value.results] == ["SeaKRResult", "RetrievalError", "SeaKRResult"]

    yielded = dict(seakr.iter_answers(questions))
    assert isinstance(yielded[1], RetrievalError) and yielded[0].answer == "Alpha" and yielded[2].answer == "Gamma"
    events = list(seakr.iter_events(questions, return_exceptions=True))
    failed = [e for e in events if isinstance(e, QuestionFailed)]
    assert [e.question_index for e in failed] == [1] and failed[0].to_dict()["error"].startswith("RetrievalError")


def test_a_prompt_the_backend_refuses_fails_only_its_question():
    backend = ScriptedBackend(two_steps, max_context=2_000)
    seakr = SeaKR(backend, RETRIEVER, CONFIG)
    long_question = "Long " + "x" * 3_000 + "?"
    results = seakr.answer_many(["Alpha question?", long_question], return_exceptions=True)
    assert results[0].answer == "Alpha"
    assert isinstance(results[1], ValueError) and "does not fit" in str(results[1])


def test_closing_the_iterator_cancels_what_is_in_flight():
    backend = SteppedBackend(two_steps, lambda prompt: 1 if "Alpha" in prompt else 5)
    events = SeaKR(backend, RETRIEVER, CONFIG).iter_events(["Alpha question?", "Beta question?"])
    next(events)  # the first event comes after the first calls were submitted
    events.close()
    assert backend.cancelled  # the stream was closed with its requests still running


def test_a_failed_question_is_a_failed_row_and_the_evaluation_goes_on(tmp_path):
    def failing_search(query):
        if "Beta" in query:
            raise ConnectionError("index offline")
        return [passage(query.split()[-1])]

    questions = [
        Question(f"q{i}", q, (q.split()[0].lower(),)) for i, q in enumerate(["Alpha q?", "Beta q?", "Gamma q?"])
    ]
    method = make_method("seakr", ScriptedBackend(two_steps), FakeRetriever(default=failing_search), CONFIG)
    results = ResultsFile.open(tmp_path / "seakr.jsonl", method.describe())
    summary = evaluate(method, questions, results, progress=False)
    rows = {r["id"]: r for r in results.records}
    assert rows["q1"]["error"].startswith("RetrievalError") and rows["q1"]["f1"] == 0.0
    assert rows["q0"]["f1"] == rows["q2"]["f1"] == 1.0 and "error" not in rows["q0"]
    assert summary.questions == 3 and summary.failed == 1


def test_baselines_run_on_the_same_driver():
    backend = SteppedBackend(two_steps, lambda prompt: 1)
    result = SingleRetrieval(backend, RETRIEVER, CONFIG).answer("Alpha question?")
    assert result.answer == "Alpha" and result.searches == 1
    assert all(config.k == 0 for batch in backend.batches for _, config in batch)
