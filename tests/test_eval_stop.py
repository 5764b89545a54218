"""``seakr eval`` against a server that is down or hung (issue 49): the run stops after ``STOP_AFTER_UNAVAILABLE``
questions in a row failed because the server was unavailable, with one message that names the server, the timeout
and where the answered questions are; running it again resumes.  A question's own failure goes on as before.

The fakes need no network; the hung server is a real HTTP server on 127.0.0.1 that answers ``/v1/seakr/info`` and
then nothing, behind a real ``RemoteBackend``."""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer

import pytest
from fakes import FakeRetriever
from test_ablations import DOCS
from test_client_faults import INFO, Handler, serve  # noqa: F401 - the stub server's fixture
from test_eval_runner import ListMethod
from test_reasoner import CONFIG

from seakr_integrations.backends.remote import RemoteBackend
from seakr_integrations.backends.remote_errors import RemoteBackendError, ServerUnavailableError, server_unavailable
from seakr_integrations.evaluation.methods import MethodAnswer, make_method
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.results import ResultsFile, read_results
from seakr_integrations.evaluation.runner import STOP_AFTER_UNAVAILABLE, EvaluationStopped, evaluate

TEN = [Question(f"q{i}", f"Question {i}?", (f"answer {i}",)) for i in range(10)]
URL = "http://127.0.0.1:9"


def unavailable(question: str = "") -> ServerUnavailableError:
    return ServerUnavailableError(
        f"POST {URL}/v1/seakr/generate timed out after 600 s (ReadTimeout)", base_url=URL, timeout=600.0
    )


def refused(question: str) -> RemoteBackendError:
    return RemoteBackendError(f"POST {URL}/v1/seakr/generate returned HTTP 400: bad prompt {question}", 400)


class ServerMethod(ListMethod):
    """``ListMethod`` on a 'server' that answers ``up_for`` questions, then fails each with ``failure(question)``."""

    def __init__(self, up_for: int = 10**9, failure: Callable[[str], Exception] = unavailable) -> None:
        super().__init__()
        self.up_for, self.failure, self.served = up_for, failure, 0

    def answer_many(self, questions):
        answers = []
        for question, answer in zip(questions, super().answer_many(questions), strict=True):
            self.served += 1
            if self.served > self.up_for:
                error = self.failure(question)
                answer = MethodAnswer("", 0, 0, 0, error=f"{type(error).__name__}: {error}", exception=error)
            answers.append(answer)
        return answers


def _rows(path) -> list[dict]:
    return list(read_results(path)[1])


def test_a_server_down_stops_the_run_after_three_in_a_row_keeping_the_answers_and_a_rerun_resumes(tmp_path):
    path = tmp_path / "r.jsonl"
    method = ServerMethod(up_for=4)
    with ResultsFile.open(path, method.describe()) as out, pytest.raises(EvaluationStopped) as stopped:
        evaluate(method, TEN, out, batch_size=1, progress=False)
    assert STOP_AFTER_UNAVAILABLE == 3 and len(method.asked) == 4 + 3  # not the 3 questions after them
    rows = _rows(path)
    assert [r["id"] for r in rows if not r.get("error")] == ["q0", "q1", "q2", "q3"]
    assert [r["id"] for r in rows if r.get("error")] == ["q4", "q5", "q6"]
    message = str(stopped.value)
    assert f"the server at {URL} did not answer within 600 s on 3 questions in a row" in message
    assert f"The 4 answered question(s) are saved in {path}" in message and "run the same command" in message
    assert "6 question(s) left" in message and "\n" not in message
    assert (stopped.value.answered, stopped.value.left, stopped.value.in_a_row) == (4, 6, 3)

    method = ServerMethod()  # the server is back
    with ResultsFile.open(path, method.describe()) as out:
        summary = evaluate(method, TEN, out, batch_size=1, progress=False)
    assert method.asked == [[f"Question {i}?"] for i in range(4, 10)]  # the failed ones, then the rest
    assert sorted(r["id"] for r in _rows(path)) == sorted(q.id for q in TEN)  # each once
    assert summary.questions == 10 and summary.failed == 0 and summary.em == 1.0


def test_a_questions_own_failures_do_not_stop_the_run(tmp_path):
    for i, failure in enumerate((refused, lambda q: ValueError(f"no words in {q}"))):
        method = ServerMethod(up_for=0, failure=failure)
        with ResultsFile.open(tmp_path / f"{i}.jsonl", {}) as out:
            summary = evaluate(method, TEN, out, batch_size=1, progress=False)
        assert len(method.asked) == 10 and summary.failed == 10


def test_only_failures_in_a_row_count_and_none_never_stops(tmp_path):
    pattern = iter([unavailable, unavailable, refused] * 10)  # never three of the server's in a row
    method = ServerMethod(up_for=0, failure=lambda q: next(pattern)(q))
    with ResultsFile.open(tmp_path / "a.jsonl", {}) as out:
        assert evaluate(method, TEN, out, batch_size=3, progress=False).failed == 10
    method = ServerMethod(up_for=0)
    with ResultsFile.open(tmp_path / "b.jsonl", {}) as out:
        assert evaluate(method, TEN, out, batch_size=1, progress=False, stop_after_unavailable=None).failed == 10
    with ResultsFile.open(tmp_path / "c.jsonl", {}) as out, pytest.raises(ValueError, match="must be >= 1"):
        evaluate(method, TEN, out, stop_after_unavailable=0)


def test_a_batch_that_fails_together_costs_one_batch_and_the_last_questions_failing_end_as_before(tmp_path):
    method = ServerMethod(up_for=0)
    with ResultsFile.open(tmp_path / "a.jsonl", {}) as out, pytest.raises(EvaluationStopped, match="4 questions"):
        evaluate(method, TEN, out, batch_size=4, progress=False)
    assert method.asked == [[f"Question {i}?" for i in range(4)]] and len(_rows(tmp_path / "a.jsonl")) == 4

    method = ServerMethod(up_for=7)  # q7, q8, q9 fail: nothing is left to stop, the run ends with its summary
    with ResultsFile.open(tmp_path / "b.jsonl", {}) as out:
        assert evaluate(method, TEN, out, batch_size=1, progress=False).failed == 3


def test_a_method_that_raises_for_its_batch_gets_failed_rows_and_stops_too(tmp_path):
    class Raising(ListMethod):  # as closed-book does: its answer_many raises what the back-end raised
        def answer_many(self, questions):
            super().answer_many(questions)
            try:
                raise unavailable()
            except ServerUnavailableError as error:
                raise RuntimeError("the batch failed") from error

    method = Raising()
    with ResultsFile.open(tmp_path / "r.jsonl", {}) as out, pytest.raises(EvaluationStopped):
        evaluate(method, TEN, out, batch_size=2, progress=False)
    assert len(method.asked) == 2
    assert [r["error"] for r in _rows(tmp_path / "r.jsonl")] == ["RuntimeError: the batch failed"] * 4


def test_server_unavailable_reads_the_cause_chain():
    error = unavailable()
    assert server_unavailable(error) is error and server_unavailable(None) is None
    try:
        try:
            raise error
        except ServerUnavailableError:
            raise ValueError("wrapped") from None  # an explicit `from None` hides nothing from a cause check
    except ValueError as wrapped:
        assert server_unavailable(wrapped) is error  # __context__ is kept
    assert server_unavailable(refused("q")) is None and server_unavailable(ValueError("x")) is None
    assert isinstance(error, RemoteBackendError)  # callers that catch RemoteBackendError still do


# --------------------------------------------------------------------------------------------- a real hung server
class _Hung(Handler):
    """Answers ``/v1/seakr/info`` (and everything, while ``hang`` is clear); else holds the request open."""

    hang = threading.Event()
    release = threading.Event()
    paths: list[str] = []
    respond = staticmethod(lambda path: (200, "application/json", json.dumps(INFO).encode()))

    def _answer(self) -> None:
        if self.path != "/v1/seakr/info" and self.hang.is_set():
            self.paths.append(self.path)
            self.release.wait(60)  # accepted, never answered (until the test ends)
            return
        super()._answer()

    do_GET = do_POST = _answer  # noqa: N815


@pytest.fixture
def hung_url() -> Iterator[str]:
    _Hung.paths = []
    _Hung.hang.set()
    _Hung.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hung)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    _Hung.release.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("batch_size", [1, 4])
def test_seakr_on_a_hung_server_stops_after_about_one_timeout(hung_url, tmp_path, batch_size):
    backend = RemoteBackend(hung_url, timeout=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        method = make_method("seakr", backend, FakeRetriever(default=DOCS), CONFIG)
    path = tmp_path / "r.jsonl"
    started = time.monotonic()
    with ResultsFile.open(path, method.describe()) as out, pytest.raises(EvaluationStopped) as stopped:
        evaluate(method, TEN, out, batch_size=batch_size, progress=False)
    seconds = time.monotonic() - started
    print(f"batch_size={batch_size}: stopped after {seconds:.2f} s")  # 10 questions x 1 s each before
    assert seconds < 4.0, f"{seconds:.1f} s"
    in_a_row = STOP_AFTER_UNAVAILABLE  # SeaKR streams its questions: the run stops at the third failure in a row
    message = str(stopped.value)
    assert f"the server at {hung_url} did not answer within 1 s on {in_a_row} questions in a row" in message
    assert "timed out after 1 s" in message and f"0 answered question(s) are saved in {path}" in message
    rows = _rows(path)
    # the stream's order: a question that fails fast (the client already knows the server is down) may finish
    # before one still waiting on it, and the next question starts in its place
    assert len(rows) == in_a_row and {r["id"] for r in rows} <= {q.id for q in TEN} and all(r["error"] for r in rows)
    generates = [p for p in _Hung.paths if p == "/v1/seakr/generate"]
    assert len(generates) == batch_size  # after the first failure, nothing waits for the hung server again
    with ResultsFile.open(path, method.describe()) as out:  # a rerun asks these questions again, then the rest
        assert out.done == set() and out.failed == {r["id"] for r in rows}


def test_after_a_failure_the_client_checks_health_quickly_and_trusts_a_server_that_answers(hung_url):
    backend = RemoteBackend(hung_url, timeout=1.0)
    body = {"texts": ["Hi"], "add_special_tokens": False}
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="timed out after 1 s"):
        backend._request("POST", "/v1/seakr/tokenize", body)
    with pytest.raises(ServerUnavailableError, match="not sent: .* has not answered since") as raised:
        backend._request("POST", "/v1/seakr/tokenize", body)  # at once, nothing sent
    assert raised.value.base_url == hung_url and raised.value.timeout == 1.0
    assert _Hung.paths == ["/v1/seakr/info", "/v1/seakr/tokenize"] and time.monotonic() - started < 1.8
    time.sleep(1.05)
    with pytest.raises(ServerUnavailableError, match=r"its /health check failed now \(ReadTimeout within 1 s\)"):
        backend._request("POST", "/v1/seakr/tokenize", body)
    assert _Hung.paths[-1] == "/health"
    _Hung.hang.clear()  # it answers again
    time.sleep(1.05)
    assert backend._request("GET", "/v1/seakr/info")["model"] == INFO["model"]
    assert _Hung.paths[-2:] == ["/health", "/v1/seakr/info"]
    backend._request("GET", "/v1/seakr/info")
    assert _Hung.paths[-2:] == ["/v1/seakr/info", "/v1/seakr/info"]  # trusted again: no check


def test_a_503_past_the_timeout_is_the_servers_fault_and_a_400_the_requests(serve):  # noqa: F811
    def respond(path: str) -> tuple[int, str, bytes]:
        if path == "/v1/seakr/tokenize":
            return 503, "application/json", b'{"error": {"message": "at its cap"}}'
        if path == "/v1/seakr/chat_prompt":
            return 400, "application/json", b'{"error": {"message": "no messages"}}'
        return 200, "application/json", json.dumps(INFO).encode()

    backend = RemoteBackend(serve(respond), timeout=1.0)
    with pytest.raises(ServerUnavailableError, match="HTTP 503: at its cap") as raised:
        backend._request("POST", "/v1/seakr/tokenize", {})
    assert raised.value.status == 503
    with pytest.raises(RemoteBackendError, match="HTTP 400: no messages") as raised:  # sent: the server answered
        backend._request("POST", "/v1/seakr/chat_prompt", {})
    assert raised.value.status == 400 and server_unavailable(raised.value) is None


def test_the_cli_prints_one_message_and_exits_3(hung_url, tmp_path, built, capsys):
    from seakr_integrations import cli
    from seakr_integrations.cli.evaluate import STOPPED

    dataset = tmp_path / "questions.jsonl"
    dataset.write_text(
        "".join(json.dumps({"id": q.id, "question": q.question, "answers": list(q.answers)}) + "\n" for q in TEN)
    )
    out = tmp_path / "run.jsonl"
    argv = ["eval", "--dataset", str(dataset), "--index", str(tmp_path / "index"), "--no-coverage-check"]
    argv += ["--server", hung_url, "--timeout", "1", "--batch-size", "1", "--out", str(out), "-q"]
    argv += ["--exemplars", "0"]
    started = time.monotonic()
    assert cli.main(argv) == STOPPED == 3
    err = capsys.readouterr().err
    assert time.monotonic() - started < 6.0
    assert err.startswith(f"seakr: error: seakr: stopped: the server at {hung_url} did not answer within 1 s on 3")
    assert "Traceback" not in err and f"saved in {out}" in err and err.count("\n") == 1
