"""A self-aware back-end over HTTP: the model runs in ``seakr serve`` (vLLM's server with seakr's plugin), whose
routes this module speaks, or in any OpenAI-compatible server that returns logprobs, whose routes ``openai_plain``
speaks (no EigenScore there).  Why, and its retries, timeouts and errors: docs/design/backends.md.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import time
from collections.abc import Iterable
from typing import Any, Literal

import numpy as np

from seakr_integrations.backends import openai_plain
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.remote_checks import (
    DEFAULT_TIMEOUT,
    backoff,
    check_api_key,
    check_base_url,
    check_replica,
    check_timeout,
    reply_field,
    retry_after,
    server_message,
    via_replica,
)
from seakr_integrations.backends.remote_errors import (
    RemoteBackendError,
    ServerUnavailableError,
    ServerWatch,
    warn_unseeded,
)
from seakr_integrations.backends.stream import Finished, GenerationStream
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig, check_int
from seakr_integrations.wire import decode_vectors, output_from_json

__all__ = ["RemoteBackend", "RemoteBackendError", "ServerUnavailableError"]

RETRY_STATUSES = (502, 503, 504)
FIRST_CONTACT = 5.0
"""Seconds of retries before a server has answered once: a wrong URL or a server not started fails fast."""
MIN_ATTEMPT = 0.5
"""Seconds a retry must have left of the patience after its wait: one that could not finish is not sent."""


class RemoteBackend(SelfAwareBackend):
    """The self-aware back-end interface over a ``seakr serve`` server.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"`` (a trailing ``/v1`` is accepted).
        api_key: The server's ``--api-key``, if it has one (sent as a bearer token; never logged or shown).
        timeout: Seconds one request may take, retries included (a connection error or a 502/503/504 is retried with
            backoff, or after the server's ``Retry-After`` clamped to 0.5..60 s; before the server first answered,
            for ``FIRST_CONTACT`` seconds at most).
        return_vectors: Also fetch the samples' EOS vectors (to compute estimators locally); off by default, as
            the server computes every estimator it serves.  Refused for a plain server, which has none.
        max_connections: Requests in flight at once (the server batches them in its engine), at least 1.

    Attributes:
        kind: ``"seakr"`` (the server has seakr's routes: every estimator) or ``"openai"`` (a plain
            OpenAI-compatible server: the estimators that need only logprobs; ``reads_hidden_states`` is ``False``).
        seeded: Whether requests carry ``SamplingConfig.seed``: only to a server that says it takes one
            (``seeded_sampling`` in ``/v1/seakr/info``).  A plain server cannot say so (a stock vLLM on CPU exits on
            a seeded request whose prefill is chunked), so its samples are drawn unseeded: not reproducible, and
            the first call that samples warns once.

    Raises:
        ValueError: ``base_url`` is not an http(s) URL, ``timeout`` is not a positive number, ``api_key`` cannot
            be sent (a newline, whitespace, a non-ASCII character: the message says which, never the key),
            ``max_connections`` is below 1, or ``return_vectors`` is asked of a plain server.
        RemoteBackendError: The server cannot be reached, does not answer within ``timeout``, refuses the key,
            answers something that is not a seakr or OpenAI-compatible reply, or is a plain server without the
            ``/tokenize`` route SeaKR's prompts need.  The first two (and 502/503/504 past ``timeout``) are a
            ``ServerUnavailableError``; after one, each request first checks ``/health`` (``remote_errors``).
    """

    kind: Literal["seakr", "openai"]

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        return_vectors: bool = False,
        max_connections: int = 32,
    ) -> None:
        import httpx

        self.base_url = check_base_url(base_url)
        self.timeout = check_timeout(timeout)
        key = check_api_key(api_key)
        try:
            httpx.URL(self.base_url)
        except Exception as error:
            raise ValueError(f"base_url={base_url!r} is not a valid URL ({error})") from None
        self._answered = False  # whether the server has answered once: then a gap is a restart, worth waiting for
        self._watch = ServerWatch(self.base_url, self.timeout)  # once it failed, a quick check before each request
        self.return_vectors = bool(return_vectors)
        self.max_connections = check_int("max_connections", max_connections, "an integer >= 1 (default 32)", 1)
        self.seeded = False
        self._warned_unseeded = False
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        limits = httpx.Limits(max_connections=self.max_connections, max_keepalive_connections=self.max_connections)
        self._client = httpx.Client(headers=headers, timeout=self.timeout, limits=limits)
        self.last_timings = {}
        try:
            self._connect()
        except BaseException:
            self._client.close()  # no pooled connection outlives a refused or failed construction
            raise

    def _connect(self) -> None:
        """Ask the server what it is: seakr's routes (``/v1/seakr/info``), else a plain OpenAI-compatible server."""
        info = self._request("GET", "/v1/seakr/info", absent=(404,))
        if info is None:
            self._connect_plain()
            return
        self.kind = "seakr"
        self.info = info
        """What the server said about itself (``GET /v1/seakr/info``; for a plain server, what it lists)."""
        where = f"GET {self.base_url}/v1/seakr/info"
        self.model_name = str(self._field(info, "model", where, str))
        self.num_layers = self._field(info, "num_layers", where, int)
        self.hidden_size = self._field(info, "hidden_size", where, int)
        self.max_context = self._field(info, "max_context", where, int)
        self.eos_token_id = self._field(info, "eos_token_id", where, int)
        self.supports_logits = bool(info.get("supports_logits"))
        estimators = info.get("estimators", ())
        if not isinstance(estimators, list) or not all(isinstance(e, str) for e in estimators):
            raise RemoteBackendError(f"{where} answered estimators={estimators!r:.80}, not a list of names")
        self.estimators = tuple(estimators)
        self.seeded = info.get("seeded_sampling") is True
        self.dtype = info.get("dtype") if isinstance(info.get("dtype"), str) else None
        self.tokenizer = _RemoteTokenizer(self, bool(info.get("chat_template")))
        self.replica = info.get("replica") if isinstance(info.get("replica"), str) else None
        """The replica that answered the connection (host:port), if the server says."""
        self.fingerprint = info.get("fingerprint") if isinstance(info.get("fingerprint"), str) else None
        """What every later reply's replica must be (``serving.replicas``); ``None``: a server that does not say."""

    @staticmethod
    def _field(reply: Any, key: str, where: str, expected: type | tuple[type, ...] | None = None) -> Any:
        """``reply[key]`` (of the given type), or a ``RemoteBackendError`` naming ``where`` and the field."""
        try:
            return reply_field(reply, key, where, expected)
        except ValueError as error:
            raise RemoteBackendError(str(error)) from None

    def _connect_plain(self) -> None:
        """Set up a server without seakr's routes: its model, its tokenizer routes, no layers to read."""
        self.kind = "openai"
        self.reads_hidden_states = False
        self.replica = self.fingerprint = None
        server = openai_plain.connect(self._request, self.base_url, return_vectors=self.return_vectors)
        self.model_name, self.max_context, self.tokenizer = server.model, server.max_context, server.tokenizer
        self.num_layers = self.hidden_size = 0
        self.eos_token_id = -1
        self.supports_logits = False
        self.estimators = openai_plain.logprob_estimators()
        self.info = {"model": self.model_name, "max_context": self.max_context, "kind": self.kind}

    def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, absent: tuple[int, ...] = ()
    ) -> Any:
        """One JSON request with retries; the parsed reply (``None`` when the status is in ``absent``: a route the
        server may lack), or a ``RemoteBackendError`` naming URL and status.  Retries stop when their next wait
        would end after the patience (``timeout``, or ``FIRST_CONTACT`` before the server first answered), so a
        request fails within its time limit (each attempt is given what is left of ``timeout``)."""
        import httpx

        url = self.base_url + path
        self._watch.check(self._client, f"{method} {url}")
        started = time.monotonic()
        patience = self.timeout if self._answered else min(self.timeout, FIRST_CONTACT)
        for attempt in itertools.count(1):
            wait = backoff(attempt)
            left = self.timeout - (time.monotonic() - started)  # each attempt gets what is left of the timeout
            try:
                if left <= 0:
                    raise httpx.TimeoutException("no time left for another attempt")
                response = self._client.request(method, url, json=body, timeout=left)
            except httpx.TimeoutException as exc:
                raise self._watch.error(
                    f"{method} {url} timed out after {self.timeout:g} s ({type(exc).__name__})"
                ) from None
            except httpx.TransportError as exc:
                if time.monotonic() - started + wait + MIN_ATTEMPT < patience:
                    time.sleep(wait)
                    continue
                raise self._watch.error(
                    f"{method} {url} failed after {attempt} attempts in {time.monotonic() - started:.1f} s: "
                    f"{type(exc).__name__}: {exc}; is `seakr serve` running there?"
                ) from None
            if response.status_code in RETRY_STATUSES:
                wait = retry_after(response, wait)
                if time.monotonic() - started + wait + MIN_ATTEMPT < patience:
                    time.sleep(wait)
                    continue
            self._answered = True
            self._watch.answered()
            if response.status_code in absent:
                return None
            if response.status_code >= 400:
                message = (
                    f"{method} {url} returned HTTP {response.status_code}: {server_message(response)}"
                    f"{via_replica(response)}"
                )
                if response.status_code in RETRY_STATUSES:  # unavailable all along: the server's fault
                    raise self._watch.error(message, response.status_code, down=False)
                raise RemoteBackendError(message, response.status_code)
            try:
                return response.json()
            except ValueError:
                start = " ".join(response.text[:80].split()) or "an empty body"
                raise RemoteBackendError(
                    f"{method} {url} returned HTTP {response.status_code} but not JSON (it starts {start!r}): is "
                    "base_url a `seakr serve` server (or an OpenAI-compatible one), not a proxy or another service?",
                    response.status_code,
                ) from None

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        plain = ", plain OpenAI-compatible server" if self.kind == "openai" else ""
        return f"RemoteBackend({self.base_url!r}, model={self.model_name!r}{plain})"

    def tokenize(self, text: str) -> list[int]:
        return self.tokenizer(text).input_ids

    def _generate(
        self, prompts: list[str], prompt_ids: list[list[int]], configs: list[SamplingConfig], layer: int
    ) -> list[SelfAwareOutput]:
        for config in configs:
            if self.kind == "openai":
                openai_plain.check_sampling(config, self.base_url)
            self._note_unseeded(config)
        groups: dict[SamplingConfig, list[int]] = {}
        for i, config in enumerate(configs):
            groups.setdefault(config, []).append(i)
        with concurrent.futures.ThreadPoolExecutor(max(1, min(len(groups), self.max_connections))) as pool:
            done = pool.map(
                lambda config, ids: self._call([prompts[i] for i in ids], [prompt_ids[i] for i in ids], config, layer),
                groups,
                groups.values(),
            )
            outputs: dict[int, SelfAwareOutput] = {}
            for ids, group in zip(groups.values(), done, strict=True):
                outputs.update(zip(ids, group, strict=True))
        return [outputs[i] for i in range(len(prompts))]

    def _call(
        self, prompts: list[str], prompt_ids: list[list[int]], config: SamplingConfig, layer: int
    ) -> list[SelfAwareOutput]:
        """The outputs of prompts that share one sampling config: one seakr request, or a plain server's greedy and
        sample requests at once."""
        if self.kind == "openai":
            return openai_plain.generate(
                self._request, self.model_name, prompts, prompt_ids, config, layer, self.base_url, self.tokenizer.decode
            )
        body = self._body(prompts, config, layer)
        reply = self._request("POST", "/v1/seakr/generate", body)
        where = f"POST {self.base_url}/v1/seakr/generate"
        check_replica(reply, self.fingerprint, where, self.replica)
        outputs = self._field(reply, "outputs", where, list)
        if len(outputs) != len(prompts):
            raise RemoteBackendError(f"{where} returned {len(outputs)} outputs for {len(prompts)} prompts")
        try:
            return [output_from_json(p, data) for p, data in zip(prompts, outputs, strict=True)]
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            raise RemoteBackendError(f"{where} returned a malformed output ({type(error).__name__}: {error})") from None

    def _body(self, prompts: list[str], config: SamplingConfig, layer: int) -> dict[str, Any]:
        """The ``/v1/seakr/generate`` request of prompts that share one sampling config: every ``SamplingConfig``
        field (the server reads each one), with the resolved ``layer``."""
        body = {"prompts": prompts, **dataclasses.asdict(config), "stop": list(config.stop), "layer": layer}
        if not self.seeded:  # a server that has not said it takes seeds gets none
            del body["seed"]
        return {**body, "estimators": list(self.estimators), "return_vectors": self.return_vectors}

    def _note_unseeded(self, config: SamplingConfig) -> None:
        """Warn once, at the first call that samples, when the samples go without their seed."""
        if config.k and not self.seeded and not self._warned_unseeded:
            self._warned_unseeded = True
            warn_unseeded(self.base_url, self.kind == "openai", stacklevel=5)

    def stream(self) -> GenerationStream:
        """Each submitted prompt is one HTTP request at once (the server batches concurrent requests in its
        engine); ``collect`` returns the requests that came back."""
        return _RemoteStream(self)

    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: HiddenSource) -> np.ndarray:
        if self.kind == "openai":
            raise ValueError(
                f"{self.base_url} is a plain OpenAI-compatible server: it returns no hidden states to read; start a "
                f"server with seakr's plugin: {openai_plain.PLUGIN_COMMAND}"
            )
        reply = self._request("POST", "/v1/seakr/vectors", {"sequences": sequences, "layer": layer, "source": source})
        check_replica(reply, self.fingerprint, f"POST {self.base_url}/v1/seakr/vectors", self.replica)
        return decode_vectors(self._field(reply, "vectors", f"POST {self.base_url}/v1/seakr/vectors"))


class _RemoteStream(GenerationStream):
    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend
        self._pool = concurrent.futures.ThreadPoolExecutor(backend.max_connections, thread_name_prefix="seakr-remote")
        self._futures: dict[concurrent.futures.Future, int] = {}
        self._next_ticket = 0

    def submit(self, prompt: str, config: SamplingConfig) -> int:
        backend = self.backend
        backend._checked_prompts([prompt])
        layer = backend.resolve_layer(config.layer)
        ids: list[int] = []
        backend._note_unseeded(config)
        if backend.kind == "openai":  # a seakr server tokenises and checks the prompt itself
            openai_plain.check_sampling(config, backend.base_url)
            ids = backend.tokenize(prompt)
            backend._check_fits(0, ids, config)
        ticket = self._next_ticket
        self._next_ticket += 1
        self._futures[self._pool.submit(backend._call, [prompt], [ids], config, layer)] = ticket
        return ticket

    @property
    def pending(self) -> int:
        return len(self._futures)

    def collect(self) -> list[Finished]:
        if not self._futures:
            return []
        done, _ = concurrent.futures.wait(self._futures, return_when=concurrent.futures.FIRST_COMPLETED)
        finished: list[Finished] = []
        for future in done:
            ticket = self._futures.pop(future)
            try:
                finished.append((ticket, future.result()[0]))
            except Exception as error:
                finished.append((ticket, error))
        return finished

    def cancel(self, tickets: Iterable[int] | None = None) -> None:
        chosen = None if tickets is None else set(tickets)
        for future, ticket in list(self._futures.items()):
            if chosen is None or ticket in chosen:
                future.cancel()  # a request already sent finishes on the server; its reply is dropped
                del self._futures[future]

    def close(self) -> None:
        self.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)


class _RemoteTokenizer(openai_plain.ServerTokenizer):
    """The tokenizer calls answered by seakr's routes."""

    def __init__(self, backend: RemoteBackend, has_template: bool) -> None:
        self._backend = backend
        self.chat_template = "server" if has_template else None

    def _ask(self, route: str, body: dict[str, Any], key: str, expected: type = list) -> Any:
        reply = self._backend._request("POST", f"/v1/seakr/{route}", body)
        return self._backend._field(reply, key, f"POST {self._backend.base_url}/v1/seakr/{route}", expected)

    def _ask_ids(self, text: str, add_special_tokens: bool) -> tuple[int, ...]:
        return tuple(self._ask("tokenize", {"texts": [text], "add_special_tokens": add_special_tokens}, "token_ids")[0])

    def _ask_text(self, ids: tuple[int, ...], skip_special_tokens: bool) -> str:
        body = {"token_ids": [list(ids)], "skip_special_tokens": skip_special_tokens}
        return self._ask("detokenize", body, "texts")[0]

    def apply_chat_template(self, messages: list[dict[str, str]], **_: Any) -> str:
        return self._ask("chat_prompt", {"messages": messages}, "prompt", str)
