"""One self-aware model, described the same way for every framework: where it runs, how it samples, how it scores.

LangChain's ``ChatSeaKR`` / ``SeaKRLLM`` and LlamaIndex's ``SeaKRLLM`` are faces of one model; ``SelfAwareModel``
validates that description once and resolves it to one back-end per process (docs/design/core.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.concurrent import ConcurrentBackend, concurrent_backend
from seakr_integrations.backends.loading import BACKEND_KINDS, canonical_model_name, shared_backend
from seakr_integrations.backends.remote_checks import DEFAULT_TIMEOUT, check_api_key, check_base_url, check_timeout
from seakr_integrations.backends.scored import scored_generate
from seakr_integrations.models import DEFAULT_MODEL, hub_id, known_model_names, packaged_model
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig, check_flag
from seakr_integrations.reasoning.config import SeaKRConfig, changed_settings, check_alpha
from seakr_integrations.retrieval.passage import Retriever
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.registry import check_estimator

__all__ = ["MODEL_SAMPLING", "NOT_SELF_AWARE", "LoopCache", "SelfAwareModel"]

NOT_SELF_AWARE = (
    "{what} is not a self-aware back-end: SeaKR reads the model's hidden states, which a text-only LLM or chat model "
    "does not expose. Pass a SelfAwareBackend (HFBackend, VLLMBackend, RemoteBackend), backend='hf' or 'vllm' with "
    "a model, or base_url= of a `seakr serve` server"
)

MODEL_SAMPLING = ("k", "temperature", "top_k", "top_p", "max_tokens", "seed", "layer", "source")
"""The sampling settings a model carries into the SeaKR loop (stops are the loop's own, per call)."""

_servers: dict[tuple[str, str, float], SelfAwareBackend] = {}
_connecting: dict[tuple[str, str, float], threading.Lock] = {}
_servers_lock = threading.Lock()
"""Guards the two dicts only, never a connection: a server that does not answer holds up no other client."""


@dataclass(frozen=True)
class SelfAwareModel:
    """A self-aware model as both framework adapters name it.

    Attributes:
        backend: ``"hf"`` or ``"vllm"`` to load ``model`` once per process, or a ``SelfAwareBackend`` to use as it is.
        model: A short name (``seakr models``), a local model directory or a Hugging Face model id (``org/name``,
            ``org/name@revision``; ``None`` with ``base_url``).
        base_url: A ``seakr serve`` server whose model answers instead (``backend`` and ``model`` are then unused).
        api_key: That server's API key (never shown; one that cannot be sent is refused here, not at the first call).
        timeout: Seconds one request to that server may take, its retries included.
        sampling: How the k samples are drawn and where their hidden state is read (``SamplingConfig``).
        estimator: The uncertainty estimator of every call (``"prompt"`` makes one more greedy call, the probe).
        alpha: EigenScore's ridge.
        chat_template: Wrap prompts in the model's chat template: ``None`` does so when the tokenizer has one.

    A bad setting is a ``ValueError`` that says what to pass (a ``TypeError`` for an object that is not a back-end).
    """

    backend: str | SelfAwareBackend = "hf"
    model: str | None = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False, compare=False)
    timeout: float = DEFAULT_TIMEOUT
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    estimator: str = SeaKRConfig.estimator
    alpha: float = SeaKRConfig.alpha
    chat_template: bool | None = SeaKRConfig.chat_template

    def __post_init__(self) -> None:
        backend = "hf" if self.backend is None else self.backend
        if isinstance(backend, str):
            if backend not in BACKEND_KINDS:
                raise ValueError(f"backend={backend!r}: choose one of {BACKEND_KINDS}, or pass a SelfAwareBackend")
        elif not isinstance(backend, SelfAwareBackend):
            raise TypeError(NOT_SELF_AWARE.format(what=f"backend={type(backend).__name__}"))
        object.__setattr__(self, "backend", backend)
        if self.api_key is not None and self.base_url is None:
            raise ValueError("api_key is the key of a `seakr serve` server: pass its base_url too")
        object.__setattr__(self, "api_key", check_api_key(self.api_key))
        object.__setattr__(self, "timeout", check_timeout(self.timeout))
        if self.base_url is not None:
            check_base_url(self.base_url)
            object.__setattr__(self, "model", None)  # the server's model answers: it is known once connected
        elif isinstance(backend, SelfAwareBackend):
            object.__setattr__(self, "model", backend.model_name)
        elif (
            not Path(self.model or "").expanduser().is_dir()
            and packaged_model(self.model or "") is None
            and hub_id(self.model or "") is None
        ):
            raise ValueError(
                f"unknown model {self.model!r}: use one of {', '.join(known_model_names())}, a local Hugging Face "
                "model directory, a Hugging Face model id (org/name), base_url= of a `seakr serve` server, or "
                "backend=<a SelfAwareBackend>"
            )
        if not isinstance(self.sampling, SamplingConfig):
            raise TypeError(f"sampling must be a SamplingConfig, got {type(self.sampling).__name__}")
        check_estimator(self.estimator)
        check_alpha(self.alpha)
        check_flag("chat_template", self.chat_template, "pass True, False or None (when it has one)", none=True)

    @property
    def kind(self) -> str:
        """Where it runs, in words: ``"server"``, ``"hf"``, ``"vllm"`` or the back-end instance's class name."""
        if self.base_url is not None:
            return "server"
        return self.backend if isinstance(self.backend, str) else type(self.backend).__name__

    @property
    def answering_model(self) -> str | None:
        """The name of the model that answers: the loaded or given model's, a server's once it was asked
        (``None`` before: a repr never opens a connection)."""
        if self.base_url is None:
            return canonical_model_name(str(self.model)) if isinstance(self.backend, str) else self.model
        with _servers_lock:
            server = _servers.get(self._server_key())
        return None if server is None else server.model_name

    def describe(self) -> dict[str, Any]:
        """What a repr shows: the answering model, where it runs, and the server's URL (never its key)."""
        out: dict[str, Any] = {"model": self.answering_model or "(the server's)", "backend": self.kind}
        if self.base_url is not None:
            out["base_url"] = self.base_url
        return out

    def resolve(self) -> ConcurrentBackend:
        """The back-end, loaded (or connected) on first use, once per process for the same model or server, as its
        process-wide ``ConcurrentBackend`` so that concurrent calls take turns and share batches."""
        if self.base_url is not None:
            backend = self._server()
        elif isinstance(self.backend, SelfAwareBackend):
            backend = self.backend
        else:
            backend = shared_backend(self.backend, str(self.model))
        return concurrent_backend(backend)

    def _server(self) -> SelfAwareBackend:
        """The process's client of this server (URL, key and timeout), connected on first use.  Only the callers of
        the same server and settings wait for each other's connection attempt, each up to its ``timeout``; the
        module's lock guards the dictionaries alone, so a silent server holds up no other client."""
        key = self._server_key()
        with _servers_lock:
            if key in _servers:
                return _servers[key]
            connecting = _connecting.setdefault(key, threading.Lock())
        if not connecting.acquire(timeout=self.timeout):
            from seakr_integrations.backends.remote_errors import ServerUnavailableError

            raise ServerUnavailableError(
                f"{self.base_url} did not answer a connection attempt of this process within timeout={self.timeout:g} "
                "s; is `seakr serve` running and responsive there?",
                base_url=self.base_url or "",
                timeout=self.timeout,
            )
        try:
            with _servers_lock:
                if key in _servers:  # another caller connected while this one waited
                    return _servers[key]
            from seakr_integrations.backends.remote import RemoteBackend

            backend = RemoteBackend(self.base_url or "", api_key=self.api_key, timeout=self.timeout)
            with _servers_lock:
                _servers[key] = backend
            return backend
        finally:
            connecting.release()

    def _server_key(self) -> tuple[str, str, float]:
        return (check_base_url(self.base_url), self.api_key or "", self.timeout)

    def uses_chat_template(self) -> bool:
        """Whether prompts go inside the model's chat template (``chat_template=None``: when it has one)."""
        return self.resolve().uses_chat_template(self.chat_template)

    def prompt(self, text: str) -> str:
        """``text`` as the prompt the model is given: one user turn in its chat template when it uses one."""
        return self.resolve().chat_prompt(text) if self.uses_chat_template() else text

    def messages_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        """A conversation (``{"role", "content"}`` turns) as one prompt in the model's chat template, with the
        assistant turn opened; without a template, a plain transcript."""
        backend = self.resolve()
        if self.uses_chat_template():
            return backend.chat_messages_prompt(messages)
        lines = [f"{m['role']}: {m['content']}" for m in messages]
        return "\n".join([*lines, "assistant:"])

    def call_sampling(self, stop: Sequence[str] | None = None, **overrides: Any) -> SamplingConfig:
        """The sampling of one call: the model's, with ``stop`` and per-call ``overrides`` (any ``SamplingConfig``
        field)."""
        known = sorted(f.name for f in fields(SamplingConfig))
        unknown = set(overrides) - set(known)
        if unknown:
            raise ValueError(f"unknown generation argument(s) {sorted(unknown)}: use any of {known}")
        changes: dict[str, Any] = dict(overrides)
        if stop is not None:
            changes["stop"] = tuple(stop)
        return self.sampling.with_(**changes) if changes else self.sampling

    def generate_scored(
        self, prompts: Sequence[str], stop: Sequence[str] | None = None, **overrides: Any
    ) -> list[tuple[SelfAwareOutput, Uncertainty]]:
        """One self-aware call for ``prompts`` (already formatted), each output with its uncertainty; an
        ``estimator`` override picks another estimator for this call."""
        estimator = overrides.pop("estimator", self.estimator)
        config = self.call_sampling(stop, **overrides)
        return scored_generate(self.resolve(), list(prompts), config, estimator, self.alpha)

    def loop_config(self, config: SeaKRConfig | None = None) -> SeaKRConfig:
        """The settings a SeaKR component runs with: the model's sampling, estimator and chat template, except
        where ``config`` changes a setting from ``SeaKRConfig()``'s default (then ``config``'s wins)."""
        own: dict[str, Any] = {name: getattr(self.sampling, name) for name in MODEL_SAMPLING}
        own.update(estimator=self.estimator, alpha=self.alpha, chat_template=self.chat_template)
        return SeaKRConfig(**{**own, **changed_settings(config or SeaKRConfig())})


class LoopCache:
    """A component's ``SeaKR``: built on first use, rebuilt only when the back-end, the retriever or the settings
    change (an assignment, a copy with another retriever), so a call never runs with what it was not given."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: Any = None
        self._search: dict[str, Any] = {}

    def get(self, backend: SelfAwareBackend, retriever: Retriever | None, config: SeaKRConfig, **search: Any) -> Any:
        """The ``SeaKR`` for these three (a ``reasoning.SeaKR``) and the ``search`` settings (``search_timeout``,
        ``on_retrieval_error``); ``config`` is resolved (the calibration profiles read,
        ``config_resolution.resolve_config``) only when a loop is built, never on a call that reuses one."""
        from seakr_integrations.config_resolution import resolve_config
        from seakr_integrations.reasoning.reasoner import SeaKR

        with self._lock:
            loop = self._loop
            stale = loop is None or loop.backend is not backend or loop.retriever is not retriever
            if stale or loop.requested_config != config or self._search != search:
                loop = self._loop = SeaKR(backend, retriever, resolve_config(backend, config), **search)
                self._search = dict(search)
            return loop

    def __deepcopy__(self, memo: dict[int, Any]) -> LoopCache:
        return LoopCache()  # a copy builds its own loop (the lock cannot be copied)
