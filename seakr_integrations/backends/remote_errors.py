"""What ``RemoteBackend`` raises, and how a caller tells the server's failure (``ServerUnavailableError``: every
question fails alike until it is back, so a long run stops) from a request's own (docs/design/backends.md)."""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any

QUICK_CHECK = 5.0
"""Seconds a server seen unavailable gets to answer its ``/health`` before a request is sent to it (and the seconds
after a failure during which a request fails at once, without a check)."""


class UnseededSamplesWarning(UserWarning):
    """A server draws a client's samples without their seed: the samples (and what they decide) are not
    reproducible from run to run."""


def warn_unseeded(base_url: str, plain: bool, stacklevel: int = 2) -> None:
    """Say once per client that ``base_url``'s samples go without their seed, and why."""
    why = (
        "it is a plain OpenAI-compatible server, which cannot say whether it takes per-request seeds (a stock vLLM "
        "server on CPU with chunked prefill, vLLM's default there, exits on a seeded request)"
        if plain
        else "it says it takes no per-request seed (it runs on CPU with chunked prefill)"
    )
    warnings.warn(
        f"the samples from {base_url} are drawn without SamplingConfig.seed, so they are not reproducible: {why}. "
        "For reproducible samples, serve the model with `seakr serve MODEL` (it says it takes seeds)",
        UnseededSamplesWarning,
        stacklevel=stacklevel,
    )


class RemoteBackendError(RuntimeError):
    """The seakr server refused a request or could not be reached (the message names the URL and the status)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ServerUnavailableError(RemoteBackendError):
    """The server could not be reached, or did not answer within the client's ``timeout`` (retries included), or
    answered 502/503/504 all that time: the server's fault, not the request's.  ``status`` is the last HTTP status
    (502, 503, 504), or ``None`` when nothing answered; ``base_url`` and ``timeout`` are the client's."""

    def __init__(self, message: str, status: int | None = None, *, base_url: str, timeout: float) -> None:
        super().__init__(message, status)
        self.base_url = base_url
        self.timeout = timeout


def server_unavailable(error: BaseException | None) -> ServerUnavailableError | None:
    """The ``ServerUnavailableError`` that ``error`` is or was caused by (``__cause__``/``__context__``), else
    ``None``: the error is the request's or the question's own."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, ServerUnavailableError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


class ServerWatch:
    """Whether one client has seen its server unavailable since it last answered, and the quick check that stands in
    for a whole ``timeout`` while it has (thread-safe: a client's requests run on many threads)."""

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self.quick = min(timeout, QUICK_CHECK)
        self._down_at: float | None = None  # time.monotonic() of the last failure; None: the server answered last
        self._lock = threading.Lock()

    def error(self, message: str, status: int | None = None, *, down: bool = True) -> ServerUnavailableError:
        """The error to raise for the server's failure; ``down``: nothing answered, so requests that follow check
        the server first."""
        if down:
            with self._lock:
                self._down_at = time.monotonic()
        return ServerUnavailableError(message, status, base_url=self.base_url, timeout=self.timeout)

    def answered(self) -> None:
        """The server answered a request: requests go to it directly again."""
        self._down_at = None

    def check(self, client: Any, what: str) -> None:
        """Before sending ``what`` (``"POST URL"``): nothing while the server is trusted; else a ``/health`` check
        of ``quick`` seconds, or a ``ServerUnavailableError`` at once when the last failure is more recent than
        that."""
        import httpx

        down_at = self._down_at
        if down_at is None:
            return
        since = time.monotonic() - down_at
        if since < self.quick:
            raise self.error(
                f"{what} not sent: {self.base_url} failed to answer {since:.1f} s ago and has not answered since; is "
                "`seakr serve` running and responsive there?",
                down=False,
            )
        try:
            client.get(self.base_url + "/health", timeout=self.quick)
        except httpx.TransportError as exc:  # timeouts included
            raise self.error(
                f"{what} not sent: {self.base_url} failed to answer a request before, and its /health check failed "
                f"now ({type(exc).__name__} within {self.quick:g} s); is `seakr serve` running and responsive there?"
            ) from None
        self.answered()  # any status (a server without /health answers 404): the request gets its whole timeout
