"""Where an Elasticsearch cluster is and how to log in: settings, secrets that never print (why: docs/design/core.md),
and clear errors (``es_errors.py``)."""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from seakr_integrations.retrieval.es_errors import (
    ENV_API_KEY,
    ENV_CA_CERTS,
    ENV_PASSWORD,
    ENV_URL,
    ENV_USERNAME,
    AuthenticationError,
    ElasticsearchBackendError,
    translate_client_error,
)

if TYPE_CHECKING:
    from elasticsearch import AsyncElasticsearch, Elasticsearch


_INSTALL = "pip install 'seakr-integrations[elasticsearch]'"


class Secret:
    """A credential that does not show itself: ``repr``/``str``/f-strings give ``'***'``; :meth:`reveal` the value
    (only the client constructor calls it)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"a secret must be a string, got {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """The secret itself; hand it only to the client."""
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError("a Secret is not pickled: pass the credential through the environment instead")


def _secret(value: str | Secret | None) -> Secret | None:
    if value is None or isinstance(value, Secret):
        return value
    return Secret(value)


@dataclass(frozen=True)
class ElasticsearchConnection:
    """How to reach one cluster: URL, credentials, TLS and the request policy.  Build it with :meth:`from_env`.

    Attributes:
        url: The cluster's URL without user info, e.g. ``https://es.example.org:9200`` (safe to print).
        api_key: An API key (the encoded ``id:key`` form Kibana shows, or ``id:key`` itself).
        username: User name for basic auth (not secret; printed in messages).
        auth_source: Where the credentials came from, for authentication errors; ``""`` without credentials.
        ca_certs: Path of a CA bundle for a cluster with a private certificate authority.
        verify_certs: Check the server's TLS certificate (leave on outside throw-away test clusters).
        request_timeout: Seconds one request may take.
        max_retries: Retries of a refused or reset connection and of HTTP 429/502/503/504.
        retry_on_timeout: Also retry requests that timed out (off: an unreachable cluster fails in about
            ``request_timeout``).
    """

    url: str
    api_key: Secret | None = field(default=None, repr=False)
    username: str | None = None
    password: Secret | None = field(default=None, repr=False)
    auth_source: str = ""
    ca_certs: str | None = None
    verify_certs: bool = True
    request_timeout: float = 10.0
    max_retries: int = 3
    retry_on_timeout: bool = False

    @classmethod
    def from_env(
        cls,
        url: str | None = None,
        *,
        api_key: str | Secret | None = None,
        username: str | None = None,
        password: str | Secret | None = None,
        ca_certs: str | None = None,
        verify_certs: bool = True,
        request_timeout: float = 10.0,
        max_retries: int = 3,
        retry_on_timeout: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> ElasticsearchConnection:
        """Settings from the arguments, falling back to the environment for what they leave out.

        Credentials come as a whole from the first place that gives any: the arguments, the environment, then user info
        in the URL (moved out of it, never printed).  ``url``, ``api_key``, ``username``, ``password`` and ``ca_certs``
        default to ``$ELASTICSEARCH_URL``, ``_API_KEY``, ``_USERNAME``, ``_PASSWORD`` and ``_CA_CERTS`` in ``environ``.

        Raises:
            ValueError: No URL, a URL that is not ``http(s)://host[:port]``, half a basic-auth pair, both an API key
                and a password, or a timeout/retry count out of range (never naming a credential).
        """
        env = os.environ if environ is None else environ
        raw_url = url if url is not None else env.get(ENV_URL, "")
        if not isinstance(raw_url, str) or not raw_url.strip():
            raise ValueError(
                f"no Elasticsearch URL: pass url= (--es URL on the command line) or set {ENV_URL}, "
                "e.g. http://localhost:9200"
            )
        clean_url, url_user, url_password = _split_url(raw_url.strip())
        if api_key is not None or username is not None or password is not None:
            key, user, pw, source = api_key, username, password, "the api_key/username/password arguments"
        elif env.get(ENV_API_KEY) or env.get(ENV_USERNAME) or env.get(ENV_PASSWORD):
            key, user, pw = env.get(ENV_API_KEY) or None, env.get(ENV_USERNAME) or None, env.get(ENV_PASSWORD) or None
            source = ", ".join(n for n in (ENV_API_KEY, ENV_USERNAME, ENV_PASSWORD) if env.get(n))
        elif url_user is not None:
            key, user, pw, source = None, url_user, url_password, "the user info in the URL"
        else:
            key, user, pw, source = None, None, None, ""
        if key is not None and (user is not None or pw is not None):
            raise ValueError(
                f"both an API key and a username/password are given (from {source}); use one of them: the API key, "
                "or basic auth"
            )
        if (user is None) != (pw is None):
            missing = "password" if pw is None else "username"
            raise ValueError(
                f"basic auth needs a username and a password, but the {missing} is missing (from {source}); set "
                f"{ENV_USERNAME} and {ENV_PASSWORD} together, or use an API key ({ENV_API_KEY})"
            )
        if not isinstance(request_timeout, (int, float)) or not request_timeout > 0:
            raise ValueError(f"request_timeout={request_timeout!r}: must be a number of seconds > 0")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries={max_retries!r}: must be an integer >= 0")
        return cls(
            url=clean_url,
            api_key=_secret(key),
            username=user,
            password=_secret(pw),
            auth_source=source,
            ca_certs=ca_certs if ca_certs is not None else env.get(ENV_CA_CERTS) or None,
            verify_certs=verify_certs,
            request_timeout=float(request_timeout),
            max_retries=max_retries,
            retry_on_timeout=retry_on_timeout,
        )

    @property
    def auth(self) -> str:
        """``"api key"``, ``"basic (user NAME)"`` or ``"none"`` (what ``repr`` and messages show)."""
        if self.api_key is not None:
            return "api key"
        if self.username is not None:
            return f"basic (user {self.username})"
        return "none"

    def __repr__(self) -> str:
        return (
            f"ElasticsearchConnection(url={self.url!r}, auth={self.auth!r}, request_timeout={self.request_timeout:g}, "
            f"max_retries={self.max_retries})"
        )

    def scrub(self, text: str) -> str:
        """``text`` with the password, the API key and both halves of its (base64-decoded) ``id:key`` form replaced by
        ``***`` (for anything the server sent back)."""
        forms = [self.password.reveal()] if self.password is not None else []
        if self.api_key is not None:
            key = self.api_key.reveal()
            try:
                decoded = base64.b64decode(key, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                decoded = key
            forms += [key, decoded, *(part for part in decoded.split(":", 1) if len(part) >= 4)]
        for secret in sorted((f for f in forms if f), key=len, reverse=True):  # longest first: a key before its halves
            text = text.replace(secret, "***")
        return text

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for ``Elasticsearch(...)`` / ``AsyncElasticsearch(...)`` (they hold the secrets)."""
        options: dict[str, Any] = {
            "hosts": [self.url],
            "request_timeout": self.request_timeout,
            "max_retries": self.max_retries,
            "retry_on_timeout": self.retry_on_timeout,
            "verify_certs": self.verify_certs,
        }
        if self.ca_certs:
            options["ca_certs"] = self.ca_certs
        if self.api_key is not None:
            options["api_key"] = self.api_key.reveal()
        elif self.username is not None and self.password is not None:
            options["basic_auth"] = (self.username, self.password.reveal())
        return options

    def client(self) -> Elasticsearch:
        """A new synchronous client (thread-safe; share it)."""
        es = _import_client()
        with self.errors("connect"):
            return es.Elasticsearch(**self.client_options())

    def async_client(self) -> AsyncElasticsearch:
        """A new asyncio client; create it on the event loop that will use it (its HTTP session is bound there)."""
        es = _import_client()
        try:
            import aiohttp  # noqa: F401  (the async client's HTTP layer)
        except ImportError as err:
            raise ImportError(f"concurrent Elasticsearch searches need aiohttp: {_INSTALL}") from err
        with self.errors("connect"):
            return es.AsyncElasticsearch(**self.client_options())

    @contextmanager
    def errors(self, action: str, index: str | None = None) -> Iterator[None]:
        """Translate the client's exceptions raised inside the block into this package's errors, whose messages name
        ``action`` (``"search"``, ``"create the index"``, ...) and ``index``."""
        started = time.monotonic()
        try:
            yield
        except ElasticsearchBackendError:
            raise
        except Exception as exc:
            translated = translate_client_error(exc, self, action, index, time.monotonic() - started)
            if translated is None:
                raise
            # Authentication failures drop the client's exception: it carries the server's full error body.
            raise translated from (None if isinstance(translated, AuthenticationError) else exc)


def _import_client() -> Any:
    try:
        import elasticsearch
    except ImportError as err:
        raise ImportError(f"the Elasticsearch back-end needs the official client: {_INSTALL}") from err
    return elasticsearch


def _split_url(raw: str) -> tuple[str, str | None, str | None]:
    """``(url without user info, with its port, user, password)``; a bad URL is shown only when it has no ``@``."""
    shown = raw if "@" not in raw else "(not shown: it contains user info)"
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as err:
        raise ValueError(
            f"Elasticsearch URL {shown} is malformed ({err}); expected e.g. http://localhost:9200"
        ) from None
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(
            f"Elasticsearch URL {shown} must look like http://HOST:PORT or https://HOST:PORT, e.g. "
            "http://localhost:9200"
        )
    netloc = f"[{host}]" if ":" in host else host
    # The client needs a port; a URL without one means the scheme's (Elastic Cloud endpoints are https on 443).
    netloc += f":{port if port is not None else (443 if parts.scheme == 'https' else 80)}"
    clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return clean, user, password
