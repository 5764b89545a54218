"""The Elasticsearch back-end's errors, and the translation of the client's exceptions into them: each says which
cluster, what went wrong and what to change, carries no credential, and derives from the built-in error a caller
would catch anyway (``ConnectionError``, ``PermissionError``, ``LookupError``, ``ValueError``).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

ENV_URL = "ELASTICSEARCH_URL"
ENV_API_KEY = "ELASTICSEARCH_API_KEY"
ENV_USERNAME = "ELASTICSEARCH_USERNAME"
ENV_PASSWORD = "ELASTICSEARCH_PASSWORD"
ENV_CA_CERTS = "ELASTICSEARCH_CA_CERTS"
"""The environment variables a connection reads (``es_connection``), named here so that the errors can say which
one to set without importing the connection."""


class ElasticsearchBackendError(RuntimeError):
    """Base of every error the Elasticsearch back-end raises; ``url`` is the cluster's (without credentials)."""

    def __init__(self, message: str, url: str = "") -> None:
        super().__init__(message)
        self.url = url


class ClusterUnreachableError(ElasticsearchBackendError, ConnectionError):
    """No answer from the cluster: refused, unknown host, TLS failure or timeout (the message names the URL)."""


class AuthenticationError(ElasticsearchBackendError, PermissionError):
    """The cluster rejected the credentials (HTTP 401) or they lack a privilege (HTTP 403)."""


class IndexNotFoundError(ElasticsearchBackendError, LookupError):
    """The index does not exist; the message says how to build it."""


class MappingError(ElasticsearchBackendError, ValueError):
    """The index exists but lacks the configured fields (or maps them as something other than text)."""


class IncompleteIndexError(ElasticsearchBackendError):
    """A ``seakr index`` build into the index was interrupted (or is still running); rerunning it completes it."""


def how_to_build(url: str, index: str) -> str:
    """The command that builds (or completes) ``index`` at ``url``, for error messages."""
    return f"`seakr index CORPUS.jsonl --es {url} --index {index}`"


class DescribedConnection(Protocol):
    """What an error message says of the connection a client error was raised on (``es_connection``'s
    ``ElasticsearchConnection`` is one): the errors need these few facts, not the connection's construction."""

    @property
    def url(self) -> str: ...

    @property
    def request_timeout(self) -> float: ...

    @property
    def max_retries(self) -> int: ...

    @property
    def auth(self) -> str: ...

    @property
    def auth_source(self) -> str: ...

    def scrub(self, text: str) -> str: ...


def translate_client_error(
    exc: BaseException,
    conn: DescribedConnection,
    action: str,
    index: str | None = None,
    elapsed: float | None = None,
) -> ElasticsearchBackendError | None:
    """This package's error for an exception of the Elasticsearch client (``None`` for one that is not the client's),
    every text from the server scrubbed of ``conn``'s credentials.

    Args:
        conn: The connection ``exc`` was raised on (its URL, timeouts, credentials' kind and source, ``scrub``).
        action: What was being done (``"search"``, ``"create the index"``, ...).
        elapsed: Seconds the request ran, when known (said in timeouts and unreachable errors).
    """
    try:
        import elastic_transport
        import elasticsearch
    except ImportError:  # pragma: no cover - nothing could have raised a client error
        return None
    on_index = f" on index {index!r}" if index else ""
    url, where = conn.url, f" ({action}{on_index})"
    waited = f" after {elapsed:.1f} s" if elapsed is not None else ""
    if isinstance(exc, elastic_transport.ConnectionTimeout):
        return ClusterUnreachableError(
            f"Elasticsearch at {url} did not answer within request_timeout={conn.request_timeout:g} s{where}"
            f"{waited}; check that the cluster is up and reachable from here, or raise request_timeout",
            url,
        )
    if isinstance(exc, elastic_transport.TlsError):
        return ClusterUnreachableError(
            f"TLS to Elasticsearch at {url} failed{where}: {conn.scrub(_reason(exc))}; if the cluster uses a "
            f"private certificate authority, set {ENV_CA_CERTS} (ca_certs=) to its certificate",
            url,
        )
    if isinstance(exc, elastic_transport.ConnectionError):
        return ClusterUnreachableError(
            f"cannot reach Elasticsearch at {url}{where}: {conn.scrub(_reason(exc))}{waited} ({conn.max_retries} "
            f"retries); check that the cluster is running and that the URL ({ENV_URL} or --es) is right",
            url,
        )
    if isinstance(exc, elasticsearch.AuthenticationException):
        if conn.auth == "none":
            fix = f"the cluster needs credentials: set {ENV_API_KEY}, or {ENV_USERNAME} and {ENV_PASSWORD}"
        else:
            fix = f"check the {conn.auth} credentials from {conn.auth_source}"
        return AuthenticationError(
            f"authentication failed: Elasticsearch at {url} rejected the {conn.auth} credentials{where} (HTTP "
            f"401: {conn.scrub(_api_reason(exc))}); {fix}",
            url,
        )
    if isinstance(exc, elasticsearch.AuthorizationException):
        return AuthenticationError(
            f"permission denied: Elasticsearch at {url} accepted the {conn.auth} credentials but they may not "
            f"{action}{on_index} (HTTP 403: {conn.scrub(_api_reason(exc))}); grant the user or API key that privilege",
            url,
        )
    if isinstance(exc, elasticsearch.NotFoundError) and _api_type(exc) == "index_not_found_exception":
        name = index or "?"
        return IndexNotFoundError(
            f"Elasticsearch index {name!r} does not exist at {url}; build it with {how_to_build(url, name)}", url
        )
    if isinstance(exc, elasticsearch.UnsupportedProductError):
        return ElasticsearchBackendError(
            f"the server at {url} is not Elasticsearch (or an unsupported distribution){where}: {conn.scrub(str(exc))}",
            url,
        )
    if isinstance(exc, elasticsearch.ApiError):
        return ElasticsearchBackendError(
            f"Elasticsearch at {url} refused to {action}{on_index} (HTTP "
            f"{exc.meta.status} {_api_type(exc)}: {conn.scrub(_api_reason(exc))})",
            url,
        )
    if isinstance(exc, elastic_transport.TransportError):
        return ElasticsearchBackendError(
            f"request to Elasticsearch at {url} failed{where}: {conn.scrub(str(exc))}", url
        )
    return None


def _reason(exc: BaseException) -> str:
    """The innermost useful words of a connection error (``connection refused``, ``host not found``, ...)."""
    text = str(exc)
    for pattern, reason in (
        (r"Connection refused", "connection refused"),
        (
            r"Name or service not known|nodename nor servname|getaddrinfo failed|No address associated",
            "host name not found",
        ),
        (r"Connection reset", "connection reset by the server"),
        (r"Network is unreachable", "network unreachable"),
        (r"timed out", "timed out"),
        (r"CERTIFICATE_VERIFY_FAILED|certificate verify failed", "the server's certificate could not be verified"),
        (r"WRONG_VERSION_NUMBER|wrong version number", "the server does not speak TLS (use http://)"),
    ):
        if re.search(pattern, text):
            return reason
    return re.sub(r"<[^>]* object at 0x[0-9a-f]+>", "connection", text)[:300]


def _api_type(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("type", ""))
    return str(getattr(exc, "message", "") or "")


def _api_reason(exc: Any) -> str:
    """The top-level ``reason`` of an API error (not its details, which can name credential ids)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("reason", ""))[:300] or _api_type(exc)
    if isinstance(body, str) and body.strip():
        return body.strip()[:300]
    return str(getattr(exc, "message", "") or "no details")
