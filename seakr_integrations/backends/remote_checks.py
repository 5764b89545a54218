"""What ``RemoteBackend`` checks before and after each request (the URL, the API key, the timeout, the shape of the
server's answer), apart from the HTTP code so that every entry point validates the same way (docs/design/backends.md).
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from seakr_integrations.backends.remote_errors import RemoteBackendError
from seakr_integrations.params import check_seconds

DEFAULT_TIMEOUT = 600.0
"""Seconds one request to a model server may take, by default (a generate call of many samples on a CPU server can
take minutes).  ``RemoteBackend(timeout=)``, ``ChatSeaKR`` / ``SeaKRLLM(timeout=)`` and ``seakr ... --timeout``."""

RETRY_AFTER_RANGE = (0.5, 60.0)
"""Seconds a ``Retry-After`` may ask a client to wait: at least half a second (a server that says 0, or less, would
otherwise draw a request storm: 1,024 requests in 2 s), at most a minute."""

_SCHEME_TYPO = re.compile(r"^(h?t?t?p?s?)(:/{0,3}|/{1,3})", re.IGNORECASE)
_TYPE_NAMES = {"str": "string", "int": "integer", "float": "number", "list": "list", "dict": "object"}
_NOT_SEAKR = (
    ": is base_url a `seakr serve` server (or an OpenAI-compatible one) of this version, not a proxy or another "
    "service?"
)


def check_timeout(value: object) -> float:
    """``value`` as seconds > 0, or a ``ValueError`` saying what to pass."""
    return check_seconds("timeout", value, f" (default {DEFAULT_TIMEOUT:g})")


def check_base_url(base_url: object) -> str:
    """The server's root URL: ``base_url`` without a trailing ``/`` or ``/v1``; a ``ValueError`` for anything but an
    ``http(s)://`` URL with a host (a typo'd scheme such as ``htp://`` is named) or for one route's URL."""
    if not isinstance(base_url, str) or not base_url.strip():
        raise ValueError(f"base_url={base_url!r}: give the server's URL, e.g. http://127.0.0.1:8000")
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or "://" not in url:
        typo = _SCHEME_TYPO.match(url)
        hint = ""
        if typo and typo.group(0).lower() not in ("http://", "https://"):
            hint = f" (the scheme {typo.group(0)!r} looks mistyped)"
        raise ValueError(
            f"base_url={base_url!r} is not an http:// or https:// URL{hint}: give the server's URL, e.g. "
            "http://127.0.0.1:8000"
        )
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        url = url[: url.rstrip("/").rfind("/v1")]
    elif "/v1/" in path + "/":
        root = url[: url.find("/v1/")]
        raise ValueError(
            f"base_url={base_url!r} names one of the server's routes: give the server's root URL ({root}); the "
            "client adds /v1/... itself"
        )
    return url


def check_api_key(key: object, source: str = "api_key") -> str | None:
    """``key`` when it can be sent as a bearer token; ``None`` for no key (``None`` or ``""``); else a ``TypeError`` or
    a ``ValueError`` saying what to fix.  Checked before any request, so a key that cannot be sent is never retried
    against the server; the messages never contain the key or any part of it (``source`` names where it came from,
    e.g. ``"SEAKR_API_KEY"``)."""
    if key is None or key == "":
        return None
    if not isinstance(key, str):
        raise TypeError(f"{source} must be a string, got {type(key).__name__}")
    problem = _key_problem(key)
    if problem is not None:
        raise ValueError(f"the API key ({source}) {problem}")
    return key


def _key_problem(key: str) -> str | None:
    """What makes ``key`` unsendable, in words that never quote it."""
    for char, what in (("\n", "a newline"), ("\r", "a carriage return")):
        if char in key:
            where = "inside it" if char in key.rstrip("\r\n") else "at its end"
            return f"contains {what} ({where}); strip it (keys pasted from files often end in one)"
    if key != key.strip():
        return "starts or ends with whitespace; strip it (a copied key often carries a space or a tab)"
    if any(c.isspace() for c in key):
        return "contains whitespace; an API key is one word: check that the whole key, and only it, was pasted"
    for char in key:
        if not char.isascii():
            name = unicodedata.name(char, "").lower() or "a non-ASCII character"
            return (
                f"contains a non-ASCII character ({name}); HTTP headers carry ASCII only: copy the key again from "
                "where the server's --api-key was set (an editor may have replaced a quote or a dash)"
            )
        if not char.isprintable():
            return "contains a control character that is not printable; copy the key again"
    return None


def reply_field(reply: Any, key: str, where: str, expected: type | tuple[type, ...] | None = None) -> Any:
    """``reply[key]``, or a ``ValueError`` naming ``where`` (method and URL) and the missing or wrong-typed field."""
    if not isinstance(reply, Mapping):
        raise ValueError(f"{where} answered {type(reply).__name__}, not a JSON object{_NOT_SEAKR}")
    if key not in reply:
        shown = ", ".join(sorted(map(str, reply))[:8]) or "none"
        raise ValueError(f"{where} answered without the field {key!r} (fields: {shown}){_NOT_SEAKR}")
    value = reply[key]
    kinds = () if expected is None else expected if isinstance(expected, tuple) else (expected,)
    if kinds and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
        names = " or ".join(_TYPE_NAMES.get(t.__name__, t.__name__) for t in kinds)
        raise ValueError(f"{where} answered {key}={value!r:.60}, not a {names}{_NOT_SEAKR}")
    return value


def server_message(response: Any) -> str:
    """The error text a server sent: vLLM's and seakr's JSON errors, an HTML page's title (a proxy's or web
    server's error page), or the start of the body."""
    try:
        data = response.json()
    except ValueError:
        text = response.text or ""
        if "html" in response.headers.get("content-type", "").lower() or text.lstrip()[:15].lower().startswith(
            ("<!doctype html", "<html")
        ):
            title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
            body = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text)).strip()
            shown = html.unescape(title.group(1).strip() if title else body)[:200] or "(empty page)"
            return f"an HTML page ({shown!r}), not a JSON error: is there a proxy or another web server at this URL?"
        return text[:300].strip() or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data))
        replica = error.get("replica") if isinstance(error, dict) else None
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:500] + (f" (replica {replica})" if isinstance(replica, str) else "")
    return str(data)[:500]


REPLICA_HEADER = "X-SeaKR-Replica"
"""The response header a load balancer in front of seakr replicas sets to the replica it asked (the nginx config in
docs/serving.md: ``add_header X-SeaKR-Replica $upstream_addr always``), so an error the balancer itself answers (a
replica down: HTTP 502) names the replica."""


def via_replica(response: Any) -> str:
    """`` (balancer: replica ADDRESS)`` when the response carries :data:`REPLICA_HEADER`, else nothing."""
    replica = response.headers.get(REPLICA_HEADER)
    return f" (balancer: replica {replica})" if replica else ""


def check_replica(reply: Any, fingerprint: str | None, where: str, connected: str | None) -> None:
    """Refuse a reply from a replica that is not like the server the client connected to (``serving.replicas``):
    behind a load balancer, its uncertainties would be on another scale than the delta calibrated for the first."""
    if fingerprint is None or not isinstance(reply, dict) or reply.get("fingerprint") in (None, fingerprint):
        return
    raise RemoteBackendError(
        f"{where} was answered by replica {reply.get('replica')!r}, which serves another model, layer, source or dtype "
        f"than {connected!r}, the one this client connected to (fingerprint {reply.get('fingerprint')} != "
        f"{fingerprint}): every replica behind a balancer must be started alike; compare their GET /v1/seakr/info, "
        "or start each with `seakr serve ... --join URL-OF-ANOTHER`"
    )


def backoff(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, ...): 0.5 doubling to 8."""
    return 0.5 * 2 ** min(max(attempt, 1) - 1, 4)


def retry_after(response: Any, default: float) -> float:
    """The wait a 502/503/504 asks for (``Retry-After`` in seconds, clamped to ``RETRY_AFTER_RANGE``), else
    ``default`` (an HTTP date, rare from a server, or a value that is not a finite number: back off as usual)."""
    raw = response.headers.get("Retry-After")
    try:
        wait = float(raw) if raw is not None else default
    except ValueError:
        return default
    if not math.isfinite(wait):
        return default if math.isnan(wait) else RETRY_AFTER_RANGE[1] if wait > 0 else RETRY_AFTER_RANGE[0]
    return min(max(wait, RETRY_AFTER_RANGE[0]), RETRY_AFTER_RANGE[1])
