"""A self-aware back-end over HTTP: the model runs in ``seakr serve`` (vLLM's server with seakr's plugin).

Real RAG apps call a model server: one GPU serves many app instances, and the server scales out with vLLM's own
tensor parallelism and replicas.  ``RemoteBackend`` is the back-end interface over the server's seakr routes, so
``SeaKR``, the LangChain and LlamaIndex adapters, the re-rankers and the gates work against a server exactly as
in-process.  It needs no torch, transformers or vLLM: the server tokenises, generates, reads the hidden states and
computes the uncertainties; vectors travel only when asked for (``return_vectors=True``).

Connections are pooled (httpx), a connection error or a 503 is retried with backoff, every request has a timeout,
and errors name the URL and the HTTP status, never the API key.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
import time
from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.stream import Finished, GenerationStream
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig
from seakr_integrations.serving.wire import decode_vectors, output_from_json

__all__ = ["RemoteBackend", "RemoteBackendError"]

RETRY_STATUSES = (502, 503, 504)


class RemoteBackendError(RuntimeError):
    """The seakr server refused a request or could not be reached (the message names the URL and the status)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RemoteBackend(SelfAwareBackend):
    """The self-aware back-end interface over a ``seakr serve`` server.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"`` (a trailing ``/v1`` is accepted).
        api_key: The server's ``--api-key``, if it has one (sent as a bearer token; never logged or shown).
        timeout: Seconds one request may take (a generate call of many samples on a CPU can take minutes).
        retries: Attempts after the first on a connection error or a 502/503/504, with exponential backoff.
        return_vectors: Also fetch the samples' EOS vectors (to compute estimators locally); off by default, as
            the server computes every estimator it serves.
        max_connections: Requests in flight at once (the server batches them in its engine).

    Raises:
        RemoteBackendError: The server cannot be reached or is not a seakr server (no ``/v1/seakr/info``).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 600.0,
        retries: int = 3,
        return_vectors: bool = False,
        max_connections: int = 32,
    ) -> None:
        import httpx

        url = str(base_url).rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url={base_url!r}: give the server's URL, e.g. http://127.0.0.1:8000")
        self.base_url = url
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.return_vectors = bool(return_vectors)
        self.max_connections = int(max_connections)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=self.max_connections, max_keepalive_connections=self.max_connections)
        self._client = httpx.Client(headers=headers, timeout=self.timeout, limits=limits)
        info = self._request("GET", "/v1/seakr/info")
        self.info = info
        """What the server said about itself (``GET /v1/seakr/info``)."""
        self.model_name = str(info["model"])
        self.num_layers = int(info["num_layers"])
        self.hidden_size = int(info["hidden_size"])
        self.max_context = int(info["max_context"])
        self.eos_token_id = int(info["eos_token_id"])
        self.supports_logits = bool(info.get("supports_logits"))
        self.estimators = tuple(info.get("estimators", ()))
        self.tokenizer = _RemoteTokenizer(self, bool(info.get("chat_template")))
        self.last_timings = {}

    # ------------------------------------------------------------------------------------------------ HTTP
    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One JSON request with retries; the parsed reply, or a ``RemoteBackendError`` naming URL and status."""
        import httpx

        url = self.base_url + path
        for attempt in range(self.retries + 1):
            try:
                response = self._client.request(method, url, json=body)
            except httpx.TimeoutException as exc:
                raise RemoteBackendError(
                    f"{method} {url} timed out after {self.timeout:g} s ({type(exc).__name__})"
                ) from None
            except httpx.TransportError as exc:
                if attempt < self.retries:
                    time.sleep(0.5 * 2**attempt)
                    continue
                raise RemoteBackendError(
                    f"{method} {url} failed after {attempt + 1} attempts: {type(exc).__name__}: {exc}; is "
                    "`seakr serve` running there?"
                ) from None
            if response.status_code in RETRY_STATUSES and attempt < self.retries:
                time.sleep(0.5 * 2**attempt)
                continue
            if response.status_code >= 400:
                raise RemoteBackendError(
                    f"{method} {url} returned HTTP {response.status_code}: {_server_message(response)}",
                    response.status_code,
                )
            return response.json()
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        return f"RemoteBackend({self.base_url!r}, model={self.model_name!r})"

    # ------------------------------------------------------------------------------------------- generation
    def tokenize(self, text: str) -> list[int]:
        return self.tokenizer(text).input_ids

    def _body(self, prompts: list[str], configs: list[SamplingConfig], layer: int) -> list[dict[str, Any]]:
        """One request body per distinct sampling config (the server takes one config per request)."""
        groups: dict[SamplingConfig, list[int]] = {}
        for i, config in enumerate(configs):
            groups.setdefault(config, []).append(i)
        bodies = []
        for config, indices in groups.items():
            bodies.append(
                {
                    "prompts": [prompts[i] for i in indices],
                    "k": config.k,
                    "temperature": config.temperature,
                    "top_k": config.top_k,
                    "top_p": config.top_p,
                    "max_tokens": config.max_tokens,
                    "min_tokens": config.min_tokens,
                    "stop": list(config.stop),
                    "seed": config.seed,
                    "layer": layer,
                    "source": config.source,
                    "estimators": list(self.estimators),
                    "return_vectors": self.return_vectors,
                    "_indices": indices,
                }
            )
        return bodies

    def _generate(
        self, prompts: list[str], prompt_ids: list[list[int]], configs: list[SamplingConfig], layer: int
    ) -> list[SelfAwareOutput]:
        outputs: list[SelfAwareOutput | None] = [None] * len(prompts)
        bodies = self._body(prompts, configs, layer)
        with concurrent.futures.ThreadPoolExecutor(max(1, min(len(bodies), self.max_connections))) as pool:
            replies = list(pool.map(self._post_generate, bodies))
        for body, reply in zip(bodies, replies, strict=True):
            for i, data in zip(body["_indices"], reply["outputs"], strict=True):
                outputs[i] = output_from_json(prompts[i], data)
        return outputs  # type: ignore[return-value]

    def _post_generate(self, body: dict[str, Any]) -> dict[str, Any]:
        sent = {k: v for k, v in body.items() if not k.startswith("_")}
        reply = self._request("POST", "/v1/seakr/generate", sent)
        if len(reply.get("outputs", ())) != len(sent["prompts"]):
            raise RemoteBackendError(f"{self.base_url}/v1/seakr/generate returned a wrong number of outputs")
        return reply

    def stream(self) -> GenerationStream:
        """Each submitted prompt is one HTTP request at once (the server batches concurrent requests in its
        engine); ``collect`` returns the requests that came back."""
        return _RemoteStream(self)

    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: HiddenSource) -> np.ndarray:
        reply = self._request("POST", "/v1/seakr/vectors", {"sequences": sequences, "layer": layer, "source": source})
        return decode_vectors(reply["vectors"])


class _RemoteStream(GenerationStream):
    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend
        self._pool = concurrent.futures.ThreadPoolExecutor(backend.max_connections, thread_name_prefix="seakr-remote")
        self._futures: dict[concurrent.futures.Future, int] = {}
        self._next_ticket = 0

    def submit(self, prompt: str, config: SamplingConfig) -> int:
        self.backend._checked_prompts([prompt])
        layer = self.backend.resolve_layer(config.layer)
        (body,) = self.backend._body([prompt], [config], layer)
        ticket = self._next_ticket
        self._next_ticket += 1
        self._futures[self._pool.submit(self.backend._post_generate, body)] = ticket
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
                reply = future.result()
                finished.append((ticket, output_from_json(reply["outputs"][0]["prompt"], reply["outputs"][0])))
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


class _RemoteTokenizer:
    """The tokenizer calls SeaKR's prompt building and query masking make, answered by the server."""

    def __init__(self, backend: RemoteBackend, has_template: bool) -> None:
        self._backend = backend
        self.chat_template = "server" if has_template else None
        self._lock = threading.Lock()

    def __call__(self, text: str, add_special_tokens: bool = True) -> SimpleNamespace:
        return SimpleNamespace(input_ids=list(self._tokenize(text, add_special_tokens)))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one tokenizer per back-end, lives as long as it
    def _tokenize(self, text: str, add_special_tokens: bool) -> tuple[int, ...]:
        body = {"texts": [text], "add_special_tokens": add_special_tokens}
        return tuple(self._backend._request("POST", "/v1/seakr/tokenize", body)["token_ids"][0])

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._decode(tuple(int(i) for i in ids), skip_special_tokens)

    @functools.lru_cache(maxsize=4096)  # noqa: B019
    def _decode(self, ids: tuple[int, ...], skip_special_tokens: bool) -> str:
        body = {"token_ids": [list(ids)], "skip_special_tokens": skip_special_tokens}
        return self._backend._request("POST", "/v1/seakr/detokenize", body)["texts"][0]

    def apply_chat_template(self, messages: list[dict[str, str]], **_: Any) -> str:
        return self._backend._request("POST", "/v1/seakr/chat_prompt", {"messages": messages})["prompt"]


def _server_message(response: Any) -> str:
    """The error text a server sent (vLLM's and seakr's JSON errors, or the body's start)."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:300] or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:500]
    return str(data)[:500]
