"""seakr eval's runner: scored records per question, durable and resumable; methods by name."""

import warnings

import pytest
from fakes import FakeRetriever, ScriptedBackend
from test_ablations import DOCS, respond
from test_reasoner import CONFIG

from seakr_integrations.calibration import UncalibratedDeltaWarning
from seakr_integrations.evaluation.methods import MethodAnswer, check_method, known_methods, make_method
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.results import ResultsFile, read_results
from seakr_integrations.evaluation.runner import evaluate, summarize
from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import KeepFirstResult

QUESTIONS = [
    Question(f"q{i}", f"Question {i}?", (f"answer {i}",), supporting_titles=("Gold",) if i == 0 else ())
    for i in range(5)
]


class Crash(Exception):
    pass


class ListMethod:
    """Answers "answer i" to question i, except the ones in ``wrong``; raises on ``crash_on``."""

    name = "list"

    def __init__(self, wrong=(), crash_on=None):
        self.wrong, self.crash_on, self.asked = set(wrong), crash_on, []

    def describe(self):
        return {"method": self.name}

    def answer_many(self, questions):
        self.asked.append(list(questions))
        if self.crash_on in questions:
            raise Crash(self.crash_on)
        return [
            MethodAnswer("nope" if q in self.wrong else q.replace("Question", "answer").rstrip("?"), 1, 2, 30, {"q": q})
            for q in questions
        ]


def test_records_are_scored_and_a_crashed_run_resumes_where_it_stopped(tmp_path):
    path = tmp_path / "r.jsonl"
    method = ListMethod(wrong={"Question 1?"}, crash_on="Question 3?")
    with ResultsFile.open(path, method.describe()) as out, pytest.raises(Crash):
        evaluate(method, QUESTIONS, out, batch_size=2, progress=False)
    _, records = read_results(path)
    assert [r["id"] for r in records] == ["q0", "q1"]  # the batch in flight (q2, q3) is lost, nothing else

    method = ListMethod(wrong={"Question 1?"})
    with ResultsFile.open(path, method.describe()) as out:
        summary = evaluate(method, QUESTIONS, out, batch_size=2, progress=True)
    assert method.asked == [["Question 2?", "Question 3?"], ["Question 4?"]]
    _, records = read_results(path)
    records = list(records)
    assert [r["id"] for r in records] == ["q0", "q1", "q2", "q3", "q4"]
    assert [r["em"] for r in records] == [1.0, 0.0, 1.0, 1.0, 1.0]
    assert records[0]["golds"] == ["answer 0"] and records[0]["trace"] == {"q": "Question 0?"}
    assert records[0]["supporting_titles"] == ["Gold"] and "supporting_titles" not in records[1]
    assert summary.questions == 5 and summary.em == pytest.approx(0.8) and summary.retrievals == 1.0
    assert summary.generated_tokens == 30.0 and summary.seconds >= 0.0
    assert summarize(records) == summary


class StreamingListMethod(ListMethod):
    """``ListMethod`` as a stream that finishes its questions in reverse order, ``max_in_flight`` at a time."""

    def iter_answers(self, questions, max_in_flight):
        self.in_flight = max_in_flight
        answers = self.answer_many(questions)
        yield from reversed(list(enumerate(answers)))


def test_a_streaming_method_writes_each_answer_as_it_finishes(tmp_path):
    path = tmp_path / "s.jsonl"
    method = StreamingListMethod(wrong={"Question 1?"})
    with ResultsFile.open(path, method.describe()) as out:
        summary = evaluate(method, QUESTIONS, out, batch_size=3, progress=False)
    _, records = read_results(path)
    records = list(records)
    assert method.in_flight == 3 and method.asked == [[q.question for q in QUESTIONS]]  # one stream, not batches
    assert [r["id"] for r in records] == ["q4", "q3", "q2", "q1", "q0"]  # in the order they finished
    assert summary.questions == 5 and summary.em == pytest.approx(0.8)
    assert all(r["seconds"] >= 0.0 for r in records)


def test_seakr_is_a_streaming_method():
    from seakr_integrations.evaluation.interface import StreamingMethod

    backend, retriever = ScriptedBackend(respond(1.0)), FakeRetriever(default=DOCS)
    method = make_method("seakr", backend, retriever, CONFIG)
    assert isinstance(method, StreamingMethod)
    answers = dict(method.iter_answers(["Which country is the Eiffel Tower in?", "Which country is Rome in?"], 1))
    assert sorted(answers) == [0, 1] and answers[0].prediction == "France"


def test_a_summary_needs_records():
    with pytest.raises(ValueError, match="no results"):
        summarize([])


def test_methods_by_name_and_a_clear_error_for_an_unknown_one():
    assert known_methods() == [
        "seakr",
        "closed-book",
        "cot",
        "single-retrieval",
        "ircot",
        "flare",
        "skr-knn",
        "token-gate",
    ]
    with pytest.raises(ValueError, match=r"unknown method 'flare2'.*\n  seakr: SeaKR"):
        check_method("flare2")


@pytest.mark.parametrize(
    "changes",
    [
        {"rules": (KeepFirstResult(),)},  # the paper's "w/o re-ranking" ablation
        {"rules": (KeepFirstResult(),), "retrieve": "always"},
        {"estimator": "ln_entropy"},
        {"rules": "paper,stop-on-repeated-step"},
    ],
)
def test_the_seakr_method_runs_the_loop_with_the_config_it_is_given(changes):
    config = CONFIG.with_(**changes)
    backend, retriever = ScriptedBackend(respond(1.0)), FakeRetriever(default=DOCS)
    method = make_method("seakr", backend, retriever, config)
    assert method.describe() == {"method": "seakr", "seakr": config.to_dict()}
    assert method.describe()["seakr"]["k"] == CONFIG.k  # the base configuration is kept
    [answer] = method.answer_many(["Which country is the Eiffel Tower in?"])
    assert answer.prediction == "France" and answer.retrievals == 1 and answer.lm_calls > 0
    for name in changes:
        assert answer.trace["config"][name] == config.to_dict()[name]
    with warnings.catch_warnings():  # the scripted model has no profile: the paper's delta (warned once before)
        warnings.simplefilter("ignore", UncalibratedDeltaWarning)
        described = make_method("seakr", backend, retriever).describe()["seakr"]
    assert described == SeaKRConfig(delta=-6.0).to_dict()
