"""Servers for the Elasticsearch tests: the cluster under test, the noida-db emulator, and tiny local HTTP stubs.

The suite runs against whatever ``ELASTICSEARCH_URL`` names (a real ES 8 or 9 cluster, credentials from the usual
variables).  Without it, the ``noida-db`` emulator from PyPI is started on 127.0.0.1: by ``scripts/test.sh`` for
the whole run, which sets ``SEAKR_ES_EMULATOR`` so the tests can say that they ran against an emulator, or by the
test session itself when pytest is run directly.  Behaviour a real cluster has but the emulator lacks (it does not
check credentials) is tested against :class:`StubServer`, a local HTTP server that answers like Elasticsearch.

Also a command for shell scripts (``scripts/test.sh``)::

    python tests/es_server.py serve DATA_DIR &   # prints the URL once the emulator answers, then stays with it;
    kill $!; wait $!                             # SIGTERM stops the emulator (and reaps it) and ends the helper
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = [
    "EMULATOR_ENV",
    "Emulator",
    "StubServer",
    "emulator_binary",
    "free_port",
    "server_label",
    "start_emulator",
]

EMULATOR_ENV = "SEAKR_ES_EMULATOR"
"""Set (to the emulator's name and version) when ``ELASTICSEARCH_URL`` points at an emulator, not a cluster."""


def emulator_binary() -> Path | None:
    """The noida-db server binary inside its installed package (started directly: the package's console script
    runs it as a child, so stopping the script's PID would leave the server running), or ``None``."""
    try:
        import noida_db
    except ImportError:
        return None
    name = "noida-db.exe" if os.name == "nt" else "noida-db"
    path = Path(noida_db.__file__).with_name(name)
    if not path.is_file():
        return None
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def emulator_name() -> str:
    try:
        return f"noida-db {version('noida-db')}"
    except PackageNotFoundError:
        return "noida-db"


def server_label() -> str:
    """How test ids name the server, decided before any test runs: ``noida-db-emulator`` or ``elasticsearch``."""
    if os.environ.get("ELASTICSEARCH_URL"):
        return "noida-db-emulator" if os.environ.get(EMULATOR_ENV) else "elasticsearch"
    return "noida-db-emulator" if emulator_binary() else "no-server"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Emulator:
    """A running noida-db (Elasticsearch service only) on 127.0.0.1."""

    url: str
    process: subprocess.Popen[bytes]
    data_dir: Path

    def stop(self) -> None:
        _stop(self.process.pid)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_emulator(data_dir: Path, *, timeout: float = 30.0, attempts: int = 3) -> Emulator:
    """Start the emulator on a free port with its data in ``data_dir``; return once it answers ``GET /``.

    Raises:
        RuntimeError: noida-db is not installed, or did not come up (its log is quoted).
    """
    binary = emulator_binary()
    if binary is None:
        raise RuntimeError("noida-db is not installed: pip install noida-db (it is in the dev extra)")
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir / "noida-db.log"
    for _ in range(attempts):  # the port can be taken between choosing it and the server binding it
        port = free_port()
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                [str(binary), "start", "--only", "elasticsearch", "--host", "127.0.0.1"]
                + ["--elasticsearch-port", str(port), "--data-dir", str(data_dir / "data")],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the terminal goes to the tests, which stop it themselves
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(url + "/", timeout=2) as response:
                    if response.status == 200:
                        return Emulator(url, process, data_dir)
            except OSError:
                time.sleep(0.1)
        _stop(process.pid)
        process.wait(10)
    log_text = log_path.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the noida-db emulator did not start (log {log_path}):\n{log_text}")


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


# ------------------------------------------------------------------------------------------------------- stubs
Handler = Callable[[str, str, dict[str, str], bytes], tuple[int, dict[str, Any] | None, dict[str, str]]]
"""``(method, path, headers, body) -> (status, JSON body or None, extra headers)``."""


class StubServer:
    """A threaded HTTP server on 127.0.0.1 that answers every request with ``handler``; records the requests.

    Responses carry ``X-Elastic-Product: Elasticsearch`` as a real cluster's do (the official client checks it).
    Use as a context manager.
    """

    def __init__(self, handler: Handler) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        stub = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                stub.requests.append((self.command, self.path, headers))
                status, payload, extra = handler(self.command, self.path, headers, body)
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Length", str(len(data)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

        class _Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default 5 drops connections of concurrent clients (SYN retried after 1 s)

        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="es-stub", daemon=True)

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve(data_dir: Path) -> int:
    """Start the emulator, print its URL, and keep it running until SIGTERM or SIGINT; then stop it."""

    def leave(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGINT, leave)
    emulator = start_emulator(data_dir)
    try:
        print(emulator.url, flush=True)
        return emulator.process.wait()
    finally:
        emulator.stop()


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "serve":
        return serve(Path(argv[1]))
    if argv == ["available"]:
        return 0 if emulator_binary() else 1
    print("usage: es_server.py serve DATA_DIR | available", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
