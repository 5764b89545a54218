"""A question that failed in ``seakr eval`` (issue 49: a server down past its timeout) costs no other question's
answer, and a rerun answers it again, its new row in place of the failed one: the results file ends with every
question exactly once."""

import json
import warnings

from fakes import FakeRetriever, ScriptedBackend
from test_ablations import DOCS, respond
from test_eval_runner import QUESTIONS, ListMethod
from test_reasoner import CONFIG

from seakr_integrations.backends.remote import RemoteBackendError
from seakr_integrations.evaluation.methods import MethodAnswer, make_method
from seakr_integrations.evaluation.results import ResultsFile, read_results
from seakr_integrations.evaluation.runner import evaluate

URL = "http://127.0.0.1:9/v1/seakr/generate"


class FlakyMethod(ListMethod):
    """``ListMethod`` whose questions in ``failing`` come back as failed answers (the others answered)."""

    def __init__(self, failing=()):
        super().__init__()
        self.failing = set(failing)

    def answer_many(self, questions):
        answers = super().answer_many(questions)
        return [
            MethodAnswer("", 0, 0, 0, error=f"boom {q}") if q in self.failing else a
            for q, a in zip(questions, answers, strict=True)
        ]


def _ids(path):
    return [r["id"] for r in read_results(path)[1]]


def test_failed_rows_are_retried_by_a_rerun_and_replaced_not_duplicated(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsFile.open(path, {"method": "list"}) as out:
        summary = evaluate(FlakyMethod({"Question 1?", "Question 3?"}), QUESTIONS, out, batch_size=2, progress=False)
    assert summary.questions == 5 and summary.failed == 2
    kept = {r["id"]: r for r in read_results(path)[1] if not r.get("error")}

    with ResultsFile.open(path, {"method": "list"}) as out:
        assert out.failed == {"q1", "q3"} and out.done == {"q0", "q2", "q4"}
        method = FlakyMethod({"Question 3?"})  # q3 fails again: its new failed row replaces the old one
        summary = evaluate(method, QUESTIONS, out, batch_size=2, progress=False)
    assert method.asked == [["Question 1?", "Question 3?"]] and summary.failed == 1
    assert sorted(_ids(path)) == ["q0", "q1", "q2", "q3", "q4"]
    assert not (tmp_path / "r.jsonl.tmp").exists()

    with ResultsFile.open(path, {"method": "list"}) as out:
        method = FlakyMethod()
        summary = evaluate(method, QUESTIONS, out, batch_size=2, progress=False)
    assert method.asked == [["Question 3?"]] and summary.failed == 0 and summary.em == 1.0
    records = {r["id"]: r for r in read_results(path)[1]}
    assert sorted(records) == ["q0", "q1", "q2", "q3", "q4"] and len(_ids(path)) == 5
    for qid, record in kept.items():  # the answers written before the failures are untouched
        assert records[qid] == record

    with ResultsFile.open(path, {"method": "list"}) as out:  # nothing left to do: nothing asked, nothing written
        before = path.read_bytes()
        method = FlakyMethod()
        evaluate(method, QUESTIONS, out, batch_size=2, progress=False)
    assert method.asked == [] and path.read_bytes() == before


def test_the_file_is_whole_if_the_run_is_killed_while_a_failed_row_is_replaced(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    with ResultsFile.open(path, {"method": "list"}) as out:
        evaluate(FlakyMethod({"Question 1?"}), QUESTIONS, out, batch_size=5, progress=False)
    before = path.read_bytes()

    def killed(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr("seakr_integrations.evaluation.results.os.replace", killed)
    with ResultsFile.open(path, {"method": "list"}) as out:
        try:
            evaluate(FlakyMethod(), QUESTIONS, out, batch_size=5, progress=False)
        except KeyboardInterrupt:
            pass
    assert path.read_bytes() == before  # the old file, whole; the rerun below retries q1
    monkeypatch.undo()
    with ResultsFile.open(path, {"method": "list"}) as out:
        method = FlakyMethod()
        evaluate(method, QUESTIONS, out, batch_size=5, progress=False)
    assert method.asked == [["Question 1?"]] and sorted(_ids(path)) == ["q0", "q1", "q2", "q3", "q4"]


def test_a_server_that_dies_mid_eval_costs_only_the_questions_it_was_asked_and_a_rerun_completes(tmp_path):
    """SeaKR on a fake back-end whose 'server' goes down after a few calls: the questions answered before keep their
    rows, each later question is its own failed row naming the URL, and a rerun against the server (up again)
    answers exactly those, once each."""
    server = {"calls": 0, "up_for": 16}  # 7 calls a question: two answered, the third cut off
    script = respond(1.0)

    def reply(prompt, config):
        server["calls"] += 1
        if server["calls"] > server["up_for"]:
            raise RemoteBackendError(
                f"POST {URL} failed after 4 attempts in 20.0 s: ConnectError; is `seakr serve` running there?"
            )
        return script(prompt, config)

    backend, retriever = ScriptedBackend(reply), FakeRetriever(default=DOCS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        method = make_method("seakr", backend, retriever, CONFIG)
    path = tmp_path / "seakr.jsonl"
    with ResultsFile.open(path, method.describe()) as out:
        first = evaluate(method, QUESTIONS, out, batch_size=1, progress=False)
    rows = list(read_results(path)[1])
    answered = [r["id"] for r in rows if not r.get("error")]
    failed = [r for r in rows if r.get("error")]
    assert answered == ["q0", "q1"] and first.failed == len(failed) == 3 and len(rows) == 5
    assert all("RemoteBackendError" in r["error"] and URL in r["error"] for r in failed)

    server["up_for"] = 10**9  # restarted
    before = {r["id"]: json.dumps(r, sort_keys=True) for r in rows if not r.get("error")}
    with ResultsFile.open(path, method.describe()) as out:
        assert out.failed == {r["id"] for r in failed}
        second = evaluate(method, QUESTIONS, out, batch_size=1, progress=False)
    rows = list(read_results(path)[1])
    assert sorted(r["id"] for r in rows) == [q.id for q in QUESTIONS]  # every question exactly once
    assert second.failed == 0 and all(r["prediction"] == "France" for r in rows)
    assert {r["id"]: json.dumps(r, sort_keys=True) for r in rows if r["id"] in before} == before
