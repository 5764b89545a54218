"""``RemoteBackend`` through a server that goes away and comes back (a restart) or is overloaded (503 with
``Retry-After``), against stub servers on 127.0.0.1.  A server that answered once is waited for up to ``timeout``;
one that never answered fails fast (``FIRST_CONTACT``), so a wrong URL does not hang an app for ten minutes."""

from __future__ import annotations

import json
import threading
import time
from http.server import ThreadingHTTPServer

import pytest
from test_client_faults import INFO, Handler, free_url, serve  # noqa: F401 - the stub server and its fixtures

from seakr_integrations.backends.remote import FIRST_CONTACT, RemoteBackend, RemoteBackendError
from seakr_integrations.backends.remote_checks import RETRY_AFTER_RANGE, backoff, retry_after


def _info(path: str) -> tuple[int, str, bytes]:
    return 200, "application/json", json.dumps(INFO).encode()


def _start(port: int = 0) -> ThreadingHTTPServer:
    Handler.respond = staticmethod(_info)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


def test_a_503_is_waited_for_then_the_request_goes_on(serve):  # noqa: F811
    calls = {"info": 0}

    def respond(path: str) -> tuple[int, str, bytes]:
        calls["info"] += 1
        if calls["info"] == 2:  # the server is at its cap once
            return 503, "application/json", b'{"error": {"message": "at its cap"}}'
        return _info(path)

    backend = RemoteBackend(serve(respond), timeout=30)
    started = time.monotonic()
    assert backend._request("GET", "/v1/seakr/info")["model"] == INFO["model"]
    assert calls["info"] == 3
    assert time.monotonic() - started >= 0.4  # the backoff's first wait (no Retry-After in this reply)


def test_the_server_sets_the_wait_with_retry_after() -> None:
    class Reply:
        headers = {"Retry-After": "3"}

    assert retry_after(Reply(), 0.5) == 3.0
    Reply.headers = {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}  # a date: the usual backoff
    assert retry_after(Reply(), 2.0) == 2.0
    Reply.headers = {"Retry-After": "86400"}  # capped: a client never sleeps a day on one header
    assert retry_after(Reply(), 0.5) == 60.0
    for storm in ("0", "-5", "-inf", "1e-9"):  # at least half a second: no request storm
        Reply.headers = {"Retry-After": storm}
        assert retry_after(Reply(), 4.0) == RETRY_AFTER_RANGE[0] == 0.5
    Reply.headers = {"Retry-After": "inf"}
    assert retry_after(Reply(), 0.5) == 60.0
    Reply.headers = {"Retry-After": "nan"}
    assert retry_after(Reply(), 1.0) == 1.0
    assert [backoff(a) for a in (1, 2, 3, 4, 5, 6, 2000)] == [0.5, 1, 2, 4, 8, 8, 8]  # no overflow, however many


def test_a_server_that_restarts_mid_question_is_waited_for() -> None:
    server = _start()
    port = server.server_address[1]
    backend = RemoteBackend(f"http://127.0.0.1:{port}", timeout=30)
    _stop(server)
    restarted: list[ThreadingHTTPServer] = []

    def come_back() -> None:
        time.sleep(2)
        restarted.append(_start(port))

    threading.Thread(target=come_back, daemon=True).start()
    started = time.monotonic()
    try:
        assert backend._request("GET", "/v1/seakr/info")["model"] == INFO["model"]
        assert 1.5 <= time.monotonic() - started < 20
    finally:
        for s in restarted:
            _stop(s)


def test_a_server_that_stays_away_fails_within_the_timeout_naming_the_url() -> None:
    server = _start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    backend = RemoteBackend(url, timeout=3)
    _stop(server)
    started = time.monotonic()
    with pytest.raises(RemoteBackendError, match=f"{url}/v1/seakr/info failed after .* attempts"):
        backend._request("GET", "/v1/seakr/info")
    assert time.monotonic() - started < 3 + 1


def test_a_server_that_never_answered_fails_within_first_contact(free_url) -> None:  # noqa: F811
    started = time.monotonic()
    with pytest.raises(RemoteBackendError, match="is `seakr serve` running there"):
        RemoteBackend(free_url, timeout=600)
    assert time.monotonic() - started < FIRST_CONTACT + 3
