"""The remote client keeps to what its settings say (issue 67, item 3), against stub servers on 127.0.0.1: a
``Retry-After`` of 0 or less is clamped (no request storm, no ``OverflowError``) and retries end within ``timeout``;
no lock is held across a connection attempt, so a silent server holds up no other ``base_url=`` client and each
client's own ``timeout`` holds; settings a server cannot serve are refused before any request."""

from __future__ import annotations

import json
import threading
import time

import pytest
from test_client_faults import INFO, Reply, serve, silent_url  # noqa: F401 - the stub servers

from seakr_integrations.backends.remote import RemoteBackend, ServerUnavailableError
from seakr_integrations.self_aware_model import SelfAwareModel


def _storm(retry_after: str, calls: list[float]):
    """Answers the first /v1/seakr/info, then 503 with ``Retry-After: retry_after`` to everything."""

    def respond(path: str) -> Reply:
        calls.append(time.monotonic())
        if len(calls) == 1:
            return 200, "application/json", json.dumps(INFO).encode()
        return 503, "application/json", b'{"error": {"message": "busy"}}'

    return respond


def _fails(spec: SelfAwareModel):
    """A thread's target: connect, and expect the silent server's error."""
    return lambda: pytest.raises(ServerUnavailableError, spec.resolve)


@pytest.mark.parametrize("header", ["0", "-3", "1e-12"])
def test_a_retry_after_of_zero_or_less_is_clamped_and_retries_end_within_the_timeout(serve, header):  # noqa: F811
    from test_client_faults import Handler

    calls: list[float] = []
    url = serve(_storm(header, calls))
    original = Handler._answer

    def with_header(self) -> None:  # the stub's reply, with the Retry-After header the test names
        status, kind, body = self.respond(self.path)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if status == 503:
            self.send_header("Retry-After", header)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    Handler.do_GET = Handler.do_POST = with_header
    try:
        backend = RemoteBackend(url, timeout=3.0)
        started = time.monotonic()
        with pytest.raises(ServerUnavailableError, match="HTTP 503"):
            backend._request("GET", "/v1/seakr/info")
        took = time.monotonic() - started
    finally:
        Handler.do_GET = Handler.do_POST = original
    retries = len(calls) - 1
    assert took < 3.5  # the client's timeout, retries included
    assert 2 <= retries <= 8, retries  # half a second at least between tries: not 1,024 requests in 2 s
    gaps = [b - a for a, b in zip(calls[1:], calls[2:], strict=False)]
    assert min(gaps) >= 0.45, gaps


def test_the_cli_reports_an_overloaded_server_in_one_line(serve, tmp_path, capsys, monkeypatch):  # noqa: F811
    from test_client_faults import Handler

    from seakr_integrations import cli
    from seakr_integrations.retrieval.bm25 import BM25Index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Paris", "text": "Paris is in France."}) + "\n")
    BM25Index.build(str(corpus), str(tmp_path / "index"))
    calls: list[float] = []
    url = serve(_storm("0", calls))
    original = Handler.send_response

    def send_response(self, code, message=None) -> None:
        original(self, code, message)
        if code == 503:
            self.send_header("Retry-After", "0")

    monkeypatch.setattr(Handler, "send_response", send_response)
    argv = ["ask", "Where is Paris?", "--index", str(tmp_path / "index"), "--server", url, "--timeout", "2", "-q"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "HTTP 503" in err and url in err
    assert "Traceback" not in err and "OverflowError" not in err
    assert len(calls) < 20


def test_a_silent_server_holds_up_no_other_client_and_each_timeout_holds(serve, silent_url):  # noqa: F811
    good = serve(lambda path: (200, "application/json", json.dumps(INFO).encode()))
    SelfAwareModel(base_url=good, timeout=5).resolve()  # a client that answered a moment before
    hanging = threading.Thread(target=_fails(SelfAwareModel(base_url=silent_url, timeout=20)), daemon=True)
    hanging.start()
    time.sleep(0.5)  # the silent server's first client is connecting now
    started = time.monotonic()
    assert SelfAwareModel(base_url=good, timeout=5).resolve().model_name == INFO["model"]
    assert time.monotonic() - started < 1.0
    fresh = serve(lambda path: (200, "application/json", json.dumps({**INFO, "model": "fresh"}).encode()))
    assert SelfAwareModel(base_url=fresh, timeout=5).resolve().model_name == "fresh"  # a new server, too
    assert time.monotonic() - started < 2.0
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="timed out after 3 s"):
        SelfAwareModel(base_url=silent_url, timeout=3).resolve()  # its own timeout, not the other client's
    assert time.monotonic() - started < 4.5
    assert hanging.is_alive()  # the first one is still waiting for its 20 s


def test_a_caller_of_the_same_server_waits_at_most_its_timeout_for_anothers_connection(silent_url):  # noqa: F811
    spec = SelfAwareModel(base_url=silent_url, timeout=2)
    first = threading.Thread(target=_fails(spec), daemon=True)
    first.start()
    time.sleep(0.3)
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="timeout=2 s|timed out after 2 s"):
        spec.resolve()
    assert time.monotonic() - started < 2.5 + 2.0  # the first one's attempt (what was left of it), then its own at most
    first.join(5)


def test_max_connections_below_one_is_refused_before_any_request(serve):  # noqa: F811
    from test_client_faults import Handler

    url = serve(lambda path: (200, "application/json", json.dumps(INFO).encode()))
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="max_connections="):
            RemoteBackend(url, max_connections=bad)
    assert Handler.paths == []
