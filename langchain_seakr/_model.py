"""What ``SeaKRLLM`` and ``ChatSeaKR`` share: the core's ``SelfAwareModel``, as flat LangChain fields.

The fields are LangChain's style (one per setting, with docstrings); they describe a
``seakr_integrations.SelfAwareModel``, which validates them, resolves the back-end once per process and makes the
scored call, the same object LlamaIndex's ``SeaKRLLM`` wraps.  The defaults are the core's (``SamplingConfig``,
``SeaKRConfig``, ``DEFAULT_MODEL``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, SecretStr, field_validator, model_validator

from langchain_seakr._keywords import KnownKeywords
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.concurrent import ConcurrentBackend
from seakr_integrations.backends.remote_checks import DEFAULT_TIMEOUT
from seakr_integrations.models import DEFAULT_MODEL
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.self_aware_model import NOT_SELF_AWARE, SelfAwareModel
from seakr_integrations.setting_conflicts import model_place_conflict
from seakr_integrations.uncertainty.record import Uncertainty

__all__ = ["SelfAwareModelMixin", "as_self_aware_model"]

_SAMPLING = SamplingConfig()
_LOOP = SeaKRConfig()


def as_self_aware_model(llm: Any) -> SelfAwareModel:
    """The core model behind ``llm``: a ``SeaKRLLM`` / ``ChatSeaKR``'s, a back-end's (wrapped as it is), or the
    default model on transformers for ``None``.

    Raises:
        TypeError: ``llm`` cannot give hidden states (e.g. any other LangChain chat model).
    """
    if llm is None:
        return SelfAwareModel()
    if isinstance(llm, SelfAwareModelMixin):
        return llm.spec
    if isinstance(llm, SelfAwareBackend):
        return SelfAwareModel(backend=llm)
    raise TypeError(NOT_SELF_AWARE.format(what=type(llm).__name__))


class SelfAwareModelMixin(KnownKeywords):
    """Fields and the scored call common to ``SeaKRLLM`` and ``ChatSeaKR``.

    The greedy continuation is always decoded at temperature 0; ``temperature``, ``top_k`` and ``top_p`` shape the
    ``k`` samples whose hidden states measure the uncertainty (defaults: ``SamplingConfig``'s, SeaKR's own).
    """

    # hide_input_in_errors: a validation error must never echo api_key
    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, populate_by_name=True, hide_input_in_errors=True
    )

    backend: Any = Field(default="hf", exclude=True)
    """``"hf"`` (transformers) or ``"vllm"`` to load ``model`` (once per process, on first use), or a
    ``SelfAwareBackend`` instance to use as it is.  Unused when ``base_url`` is given."""
    base_url: str | None = None
    """A ``seakr serve`` server (e.g. ``"http://127.0.0.1:8000"``) whose model to use instead of loading one."""
    api_key: SecretStr | None = None
    """The server's API key, if it has one (a key with a newline or a non-ASCII character is refused at once,
    with a message that never shows it)."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds one request to the server may take, its retries included (used with ``base_url``)."""
    model: str | None = Field(default=DEFAULT_MODEL, alias="model_name")
    """A packaged model's short name, a local Hugging Face directory or a hub id (``org/name``): the back-end's name
    when one is given; ``None`` with ``base_url`` (the server's model answers, see ``answering_model``)."""
    k: int = _SAMPLING.k
    temperature: float = _SAMPLING.temperature
    top_k: int = _SAMPLING.top_k
    top_p: float = _SAMPLING.top_p
    max_tokens: int = _SAMPLING.max_tokens
    stop: list[str] | None = None
    seed: int = _SAMPLING.seed
    layer: int | None = _SAMPLING.layer
    source: Literal["mlp", "residual"] = _SAMPLING.source
    estimator: str = _LOOP.estimator
    """Any estimator SeaKR's loop accepts; ``"prompt"`` makes one more greedy call per prompt (the probe)."""
    alpha: float = _LOOP.alpha
    chat_template: bool | None = None
    """Put prompts (and chat messages) in the model's chat template with the assistant turn opened (``None``: when
    the model has one; ``False``: send them as they are, e.g. prompts already formatted)."""

    @model_validator(mode="before")
    @classmethod
    def _one_place(cls, data: Any) -> Any:
        if isinstance(data, dict):
            model = data.get("model", data.get("model_name"))
            conflict = model_place_conflict(cls.__name__, data.get("backend"), model, data.get("base_url"))
            if conflict:
                raise ValueError(conflict)
        return data

    @field_validator("backend")
    @classmethod
    def _self_aware(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, (str, SelfAwareBackend)):
            raise ValueError(NOT_SELF_AWARE.format(what=f"backend={type(value).__name__}"))
        return "hf" if value is None else value

    @model_validator(mode="after")
    def _check(self) -> SelfAwareModelMixin:
        self.model = self.spec.model  # the core validates every field now, with its messages; a server: None
        return self

    @property
    def spec(self) -> SelfAwareModel:
        """This model as the core describes it (shared with LlamaIndex's ``SeaKRLLM``), from the fields as they
        are now (building it is cheap: the back-end is resolved once per process, on first use)."""
        sampling = SamplingConfig(
            **{n: getattr(self, n) for n in ("k", "temperature", "top_k", "top_p", "max_tokens", "seed")},
            layer=self.layer,
            source=self.source,
            stop=tuple(self.stop or ()),
        )
        key = self.api_key.get_secret_value() if self.api_key is not None else None
        return SelfAwareModel(
            backend=self.backend,
            model=self.model,
            base_url=self.base_url,
            api_key=key,
            timeout=self.timeout,
            sampling=sampling,
            estimator=self.estimator,
            alpha=self.alpha,
            chat_template=self.chat_template,
        )

    @property
    def backend_label(self) -> str:
        """The back-end in words: ``"hf"``, ``"vllm"``, ``"server"`` or the instance's class name."""
        return self.spec.kind

    @property
    def self_aware_backend(self) -> ConcurrentBackend:
        """The back-end (loaded, or connected, on first access), as its process-wide ``ConcurrentBackend`` so that
        concurrent async calls take turns and share batches."""
        return self.spec.resolve()

    @property
    def answering_model(self) -> str:
        """The name of the model that answers (a server's once it was asked)."""
        return self.spec.answering_model or "(the server's)"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            **self.spec.describe(),
            **{n: getattr(self, n) for n in ("k", "temperature", "max_tokens", "layer", "source", "estimator")},
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)  # type: ignore[misc]  # BaseLLM / BaseChatModel's
        params["ls_provider"] = "seakr"
        params["ls_model_name"] = kwargs["model"] if isinstance(kwargs.get("model"), str) else self.answering_model
        return params

    def sampling(self, stop: list[str] | None = None, **overrides: Any) -> SamplingConfig:
        """The sampling parameters of a call: the fields, then ``stop`` and per-call ``overrides``."""
        return self.spec.call_sampling(stop, **overrides)

    def scored_generate(
        self, prompts: list[str], stop: list[str] | None = None, **overrides: Any
    ) -> list[tuple[SelfAwareOutput, Uncertainty]]:
        """One self-aware back-end call for ``prompts``, each output with its uncertainty (with
        ``estimator="prompt"``, one more greedy call: the probe)."""
        return self.spec.generate_scored(prompts, stop, **overrides)
