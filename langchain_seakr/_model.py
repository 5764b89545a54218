"""What ``SeaKRLLM`` and ``ChatSeaKR`` share: which back-end they run and how they sample.

Both are thin LangChain faces of one ``SelfAwareBackend`` call; keeping the fields and the call here means the two
classes cannot drift apart in defaults, validation or the uncertainty they report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.concurrent import concurrent_backend
from seakr_integrations.backends.loading import BACKEND_KINDS, shared_backend
from seakr_integrations.models import known_model_names
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.uncertainty.estimate import ESTIMATORS, Uncertainty, estimate

__all__ = ["SelfAwareModelMixin", "resolve_backend"]

NOT_SELF_AWARE = (
    "{what} is not a self-aware back-end: SeaKR reads the model's hidden states, which a text-only LLM or chat "
    "model does not expose. Pass an HFBackend / VLLMBackend (or any SelfAwareBackend), a SeaKRLLM or a ChatSeaKR."
)


def resolve_backend(llm: Any) -> SelfAwareBackend:
    """The self-aware back-end behind ``llm`` (a back-end, ``SeaKRLLM``, ``ChatSeaKR``, or ``None`` for the
    default model), behind the process-wide ``ConcurrentBackend`` of that model: async paths call it from worker
    threads, and a back-end must not be entered twice at once (concurrent calls are batched instead).

    Raises:
        TypeError: ``llm`` cannot give hidden states (e.g. any other LangChain chat model).
    """
    if llm is None:
        return concurrent_backend(shared_backend("hf", "smollm2-135m-instruct"))
    if isinstance(llm, SelfAwareBackend):
        return concurrent_backend(llm)
    if isinstance(llm, SelfAwareModelMixin):
        return llm.self_aware_backend
    raise TypeError(NOT_SELF_AWARE.format(what=type(llm).__name__))


class SelfAwareModelMixin(BaseModel):
    """Fields and the scored call common to ``SeaKRLLM`` and ``ChatSeaKR``.

    The greedy continuation is always decoded at temperature 0; ``temperature``, ``top_k`` and ``top_p`` shape the
    ``k`` samples whose hidden states measure the uncertainty (SeaKR's defaults: 20 samples at 1.0, 50, 0.9).
    """

    # hide_input_in_errors: a validation error must never echo api_key
    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, populate_by_name=True, hide_input_in_errors=True
    )

    backend: Any = Field(default=None, exclude=True)
    """A ``SelfAwareBackend`` instance to use; when omitted one is loaded (once per process) from
    ``backend_kind`` and ``model`` on first use."""
    backend_kind: Literal["hf", "vllm"] = "hf"
    """``"hf"`` (transformers) or ``"vllm"``, used when no ``backend`` instance and no ``base_url`` is given."""
    base_url: str | None = None
    """A ``seakr serve`` server (e.g. ``"http://127.0.0.1:8000"``) whose model to use instead of loading one."""
    api_key: SecretStr | None = None
    """The server's API key, if it has one."""
    model: str = Field(default="smollm2-135m-instruct", alias="model_name")
    """A packaged model's short name or a local Hugging Face directory (the back-end's name when one is given)."""
    k: int = 20
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 0.9
    max_tokens: int = 100
    stop: list[str] | None = None
    seed: int = 42
    layer: int | None = None
    source: Literal["mlp", "residual"] = "mlp"
    estimator: str = "eigenscore"
    alpha: float = 1e-3

    _backend: SelfAwareBackend | None = PrivateAttr(default=None)

    @field_validator("backend")
    @classmethod
    def _self_aware(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, SelfAwareBackend):
            raise ValueError(NOT_SELF_AWARE.format(what=f"backend={type(value).__name__}"))
        return value

    @field_validator("estimator")
    @classmethod
    def _known_estimator(cls, value: str) -> str:
        if value not in ESTIMATORS:
            raise ValueError(f"estimator={value!r}: choose one of {', '.join(ESTIMATORS)}")
        return value

    @model_validator(mode="after")
    def _check(self) -> SelfAwareModelMixin:
        if self.api_key is not None and self.base_url is None:
            raise ValueError("api_key is the key of a `seakr serve` server: pass its base_url too")
        if self.backend is not None:
            self.model = self.backend.model_name
        elif self.base_url is not None:
            pass  # the server's model: known once connected
        elif self.backend_kind not in BACKEND_KINDS:  # pragma: no cover - Literal already checks it
            raise ValueError(f"backend_kind={self.backend_kind!r}: choose one of {BACKEND_KINDS}")
        elif not Path(self.model).expanduser().is_dir() and self.model.strip().lower() not in known_model_names():
            raise ValueError(
                f"unknown model {self.model!r}: use one of {', '.join(known_model_names())}, a local Hugging Face "
                "model directory, or pass backend=<a SelfAwareBackend>"
            )
        self.sampling()  # validates k, temperature, top_k, top_p, max_tokens, stop, layer now, not at the first call
        return self

    @property
    def self_aware_backend(self) -> SelfAwareBackend:
        """The back-end (loaded on first access when only a model name was given), as its process-wide
        ``ConcurrentBackend`` so that concurrent async calls take turns and share batches."""
        if self._backend is None:
            if self.backend is None and self.base_url is not None:
                from seakr_integrations.backends.remote import RemoteBackend

                key = self.api_key.get_secret_value() if self.api_key is not None else None
                self.backend = RemoteBackend(self.base_url, api_key=key)
                self.model = self.backend.model_name
            self._backend = concurrent_backend(self.backend or shared_backend(self.backend_kind, self.model))
        return self._backend

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "backend_kind": self.backend_kind if self.backend is None else type(self.backend).__name__,
            **{n: getattr(self, n) for n in ("k", "temperature", "max_tokens", "layer", "source", "estimator")},
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)  # type: ignore[misc]  # BaseLLM / BaseChatModel's
        params["ls_provider"] = "seakr"
        params["ls_model_name"] = kwargs["model"] if isinstance(kwargs.get("model"), str) else self.model
        return params

    def sampling(self, stop: list[str] | None = None, **overrides: Any) -> SamplingConfig:
        """The sampling parameters of a call: the fields, then ``stop`` and per-call ``overrides``."""
        stops = stop if stop is not None else self.stop
        fields = {name: getattr(self, name) for name in ("k", "temperature", "top_k", "top_p", "max_tokens", "seed")}
        fields.update({"layer": self.layer, "source": self.source, "stop": tuple(stops or ())})
        unknown = set(overrides) - set(SamplingConfig.__dataclass_fields__)
        if unknown:
            raise ValueError(
                f"unknown generation argument(s) {sorted(unknown)}: use any of "
                f"{sorted(SamplingConfig.__dataclass_fields__)}"
            )
        fields.update(overrides)
        return SamplingConfig(**fields)

    def scored_generate(
        self, prompts: list[str], stop: list[str] | None = None, **overrides: Any
    ) -> list[tuple[SelfAwareOutput, Uncertainty]]:
        """One self-aware back-end call for ``prompts``, each output with its uncertainty."""
        config = self.sampling(stop, **overrides)
        outputs = self.self_aware_backend.generate(prompts, config)
        return [(o, estimate(o, self.estimator, self.alpha)) for o in outputs]
