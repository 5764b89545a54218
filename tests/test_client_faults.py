"""The remote client's own faults (issue 49, item 4), against stub servers on 127.0.0.1: nothing listening, a
server that accepts and never answers, an HTML error page, a reply that is not JSON or lacks a field, a mistyped
URL, and an API key that cannot be sent.  Each is a clear error within the timeout the user set, naming the URL and
never the key, through ``RemoteBackend``, ``ChatSeaKR(base_url=)``, LlamaIndex ``SeaKRLLM(base_url=)`` and
``seakr ask --server``."""

from __future__ import annotations

import inspect
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fakes import ScriptedBackend
from llamaindex_fakes import QUESTION, eiffel
from pydantic import ValidationError

from langchain_seakr import ChatSeaKR
from llamaindex_seakr import SeaKRLLM
from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError
from seakr_integrations.backends.remote_checks import DEFAULT_TIMEOUT, check_api_key

KEY = "sk-test-7f3a9b"
INFO = {
    "model": "stub-served-model",
    "num_layers": 4,
    "hidden_size": 8,
    "max_context": 512,
    "eos_token_id": 2,
    "estimators": ["eigenscore"],
    "supports_logits": False,
    "chat_template": False,
}
Reply = tuple[int, str, bytes]


class Handler(BaseHTTPRequestHandler):
    """Answers every request with ``respond(path)``; records the paths it was asked."""

    respond: Callable[[str], Reply] = staticmethod(lambda path: (200, "application/json", json.dumps(INFO).encode()))
    paths: list[str] = []

    def _answer(self) -> None:
        self.paths.append(self.path)
        status, kind, body = self.respond(self.path)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str], Reply]], str]]:
    """Start a stub whose replies ``respond(path)`` gives; its URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(respond: Callable[[str], Reply]) -> str:
        Handler.respond = staticmethod(respond)
        Handler.paths = []
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def free_url() -> str:
    """A URL where nothing listens (a port the system gave out, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])  # keep it open, say nothing
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    for conn in accepted:
        conn.close()
    sock.close()


def _clear(error: BaseException, url: str) -> str:
    message = str(error)
    assert url in message, message
    assert "sk-" not in message and "7f3a9b" not in message, message
    return message


# ------------------------------------------------------------------------------------------ the server's faults
def test_nothing_listening_fails_within_the_timeout_naming_the_url(free_url):
    started = time.monotonic()
    with pytest.raises(RemoteBackendError) as raised:
        RemoteBackend(free_url, api_key=KEY, timeout=2.0)
    assert time.monotonic() - started < 3.0
    assert "is `seakr serve` running there?" in _clear(raised.value, free_url)


def test_a_server_that_never_answers_fails_after_the_timeout(silent_url):
    started = time.monotonic()
    with pytest.raises(RemoteBackendError, match=r"timed out after 1 s") as raised:
        RemoteBackend(silent_url, api_key=KEY, timeout=1.0)
    assert time.monotonic() - started < 4.0
    _clear(raised.value, silent_url)


def test_the_timeout_reaches_the_framework_models_and_the_cli(silent_url, tmp_path, built, capsys):
    from seakr_integrations import cli

    started = time.monotonic()
    chat = ChatSeaKR(base_url=silent_url, api_key=KEY, timeout=1.0)
    with pytest.raises(RemoteBackendError, match="timed out after 1 s") as raised:
        chat.invoke("Hi")
    _clear(raised.value, silent_url)
    with pytest.raises(RemoteBackendError, match="timed out after 1 s") as raised:
        SeaKRLLM(base_url=silent_url, api_key=KEY, timeout=1.0)
    _clear(raised.value, silent_url)
    argv = ["ask", QUESTION, "--index", str(tmp_path / "index"), "--server", silent_url, "--timeout", "1"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "timed out after 1 s" in err and silent_url in err and "Traceback" not in err
    assert time.monotonic() - started < 15.0
    assert ChatSeaKR().timeout == inspect.signature(SeaKRLLM).parameters["timeout"].default == DEFAULT_TIMEOUT
    with pytest.raises(ValueError, match="timeout=0"):
        ChatSeaKR(base_url=silent_url, timeout=0)


def test_an_html_error_page_is_named_as_such(serve):
    page = b"<!DOCTYPE html><html><head><title>500 Internal Server Error</title></head><body>Oops</body></html>"
    url = serve(lambda path: (500, "text/html", page))
    with pytest.raises(RemoteBackendError, match=r"HTTP 500: an HTML page \('500 Internal Server Error'\)") as raised:
        RemoteBackend(url, api_key=KEY, timeout=5)
    assert raised.value.status == 500 and "proxy" in _clear(raised.value, url)


def test_a_reply_that_is_not_json_names_the_url(serve):
    url = serve(lambda path: (200, "application/json", b"{not json at all"))
    with pytest.raises(RemoteBackendError, match=r"returned HTTP 200 but not JSON \(it starts '\{not json") as raised:
        RemoteBackend(url, timeout=5)
    _clear(raised.value, url)


@pytest.mark.parametrize(
    ("info", "message"),
    [
        ({k: v for k, v in INFO.items() if k != "num_layers"}, r"without the field 'num_layers'"),
        ({**INFO, "num_layers": "four"}, r"num_layers='four', not a integer"),
        ([1, 2], r"answered list, not a JSON object"),
    ],
)
def test_a_reply_missing_a_field_names_the_field_and_the_url(serve, info, message):
    url = serve(lambda path: (200, "application/json", json.dumps(info).encode()))
    with pytest.raises(RemoteBackendError, match=message) as raised:
        RemoteBackend(url, timeout=5)
    assert "/v1/seakr/info" in _clear(raised.value, url)


def test_the_cli_prints_a_missing_field_as_one_clear_line(serve, tmp_path, built, capsys):
    from seakr_integrations import cli

    info = {k: v for k, v in INFO.items() if k != "num_layers"}
    url = serve(lambda path: (200, "application/json", json.dumps(info).encode()))
    assert cli.main(["ask", QUESTION, "--index", str(tmp_path / "index"), "--server", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("seakr: error: GET ") and "'num_layers'" in err and url in err and "\n" not in err


# ---------------------------------------------------------------------------------------------- the URL
@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ("htp://127.0.0.1:8000", r"scheme 'htp://' looks mistyped"),
        ("http:/127.0.0.1:8000", r"scheme 'http:/' looks mistyped"),
        ("http//127.0.0.1:8000", r"scheme 'http//' looks mistyped"),
        ("127.0.0.1:8000", r"not an http:// or https:// URL"),
        ("http://", r"not an http:// or https:// URL"),
        ("http://:8000", r"not an http:// or https:// URL"),
        ("http://127.0.0.1:8000/v1/chat/completions", r"names one of the server's routes.*http://127\.0\.0\.1:8000"),
    ],
)
def test_a_mistyped_url_is_refused_before_any_request(base_url, message):
    with pytest.raises(ValueError, match=message):
        RemoteBackend(base_url, api_key=KEY)
    with pytest.raises(ValueError, match=message):
        ChatSeaKR(base_url=base_url)
    with pytest.raises(ValueError, match=message):
        SeaKRLLM(base_url=base_url)


def test_a_trailing_v1_or_slash_is_the_servers_root(serve):
    url = serve(lambda path: (200, "application/json", json.dumps(INFO).encode()))
    for given in (url + "/v1", url + "/v1/", url + "/"):
        backend = RemoteBackend(given, timeout=5)
        assert backend.base_url == url and backend.model_name == "stub-served-model"
    assert Handler.paths == ["/v1/seakr/info"] * 3


# ---------------------------------------------------------------------------------------------- the key
BAD_KEYS = [
    (KEY + "\n", r"contains a newline \(at its end\); strip it \(keys pasted from files often end in one\)"),
    (KEY + "\r\n", r"contains a newline \(at its end\)"),
    ("sk-test\n-7f3a9b", r"contains a newline \(inside it\)"),
    (KEY + "\r", r"contains a carriage return"),
    (" " + KEY, r"starts or ends with whitespace"),
    ("sk-test 7f3a9b", r"contains whitespace"),
    ("sk-test-7f3a9b\u2014", r"non-ASCII character \(em dash\)"),
    ("sk-test-7f3a9bé", r"non-ASCII character \(latin small letter e with acute\)"),
    ("sk-test-7f3a9b\x00", r"control character"),
]


@pytest.mark.parametrize(("key", "message"), BAD_KEYS)
def test_a_key_that_cannot_be_sent_is_refused_at_once_without_showing_it(serve, key, message):
    url = serve(lambda path: (200, "application/json", json.dumps(INFO).encode()))
    for make in (
        lambda: RemoteBackend(url, api_key=key),
        lambda: ChatSeaKR(base_url=url, api_key=key),
        lambda: SeaKRLLM(base_url=url, api_key=key),
    ):
        with pytest.raises(ValueError, match=message) as raised:
            make()
        text = str(raised.value) + repr(raised.value) + "".join(map(str, raised.value.args))
        assert "7f3a9b" not in text and "sk-test" not in text and raised.value.__cause__ is None
    assert Handler.paths == []  # refused before any request: no retries that blame the server


def test_a_bad_seakr_api_key_is_named_by_its_variable(serve, tmp_path, built, capsys, monkeypatch):
    from seakr_integrations import cli

    url = serve(lambda path: (200, "application/json", json.dumps(INFO).encode()))
    monkeypatch.setenv("SEAKR_API_KEY", KEY + "\n")
    assert cli.main(["ask", QUESTION, "--index", str(tmp_path / "index"), "--server", url]) == 2
    err = capsys.readouterr().err
    assert "the API key (SEAKR_API_KEY) contains a newline" in err and "7f3a9b" not in err
    assert Handler.paths == []


def test_a_good_key_is_sent_and_never_shown():
    assert check_api_key(KEY) == KEY and check_api_key("") is None and check_api_key(None) is None
    with pytest.raises(TypeError, match="api_key must be a string, got bytes"):
        check_api_key(KEY.encode())
    chat = ChatSeaKR(base_url="http://127.0.0.1:1", api_key=KEY)
    assert KEY not in repr(chat) and KEY not in str(chat.model_dump()) and KEY not in repr(chat.spec)
    with pytest.raises(ValidationError) as raised:
        ChatSeaKR(base_url="http://127.0.0.1:1", api_key=KEY + "\n")
    assert "7f3a9b" not in str(raised.value)


# ------------------------------------------------------------------------------------------- the summary
@pytest.mark.filterwarnings("ignore::seakr_integrations.calibration.UncalibratedDeltaWarning")
def test_ask_with_a_server_names_the_servers_model_in_its_summary(tmp_path, built, capsys, monkeypatch):
    from seakr_integrations import cli

    served = ScriptedBackend(eiffel)
    served.model_name = "the-served-model"
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: served)
    argv = ["ask", QUESTION, "--index", str(tmp_path / "index"), "--server", "http://127.0.0.1:1", "-q"]
    argv += ["--exemplars", "0", "--no-chat-template", "-k", "4", "--max-tokens", "10", "--delta", "-6"]
    assert cli.main(argv) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert "server http://127.0.0.1:1, the-served-model" in summary and "qwen" not in summary.lower()
    assert cli.main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["model"] == "the-served-model" and record["server"] == "http://127.0.0.1:1"
