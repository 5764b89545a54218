"""The pieces every LangChain component built on the SeaKR loop shares: its model and its ``SeaKR`` instance."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, field_serializer, field_validator

from langchain_seakr._keywords import KnownKeywords
from langchain_seakr._model import SelfAwareModelMixin, as_self_aware_model
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, check_search_settings
from seakr_integrations.reasoning.config import SeaKRConfig, changed_settings
from seakr_integrations.reasoning.reasoner import SeaKR
from seakr_integrations.retrieval.passage import Retriever
from seakr_integrations.self_aware_model import LoopCache, SelfAwareModel

__all__ = ["SeaKRComponent"]


class SeaKRComponent(KnownKeywords):
    """Holds the self-aware model (``llm``) and SeaKR's settings (``config``) for a chain, gate or re-ranker.

    ``llm`` may be a ``SeaKRLLM``, a ``ChatSeaKR``, a ``SelfAwareBackend`` or ``None`` (the default model on
    transformers, loaded once per process).  The loop samples as its ``llm`` does (``k``, temperature,
    ``max_tokens``, layer, estimator, chat template...), unless ``config`` changes a setting from its default: the
    rule of every SeaKR component in both packages (``SelfAwareModel.loop_config``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    llm: Any = Field(default=None, exclude=True)
    config: SeaKRConfig = Field(default_factory=SeaKRConfig)
    search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT
    """Seconds one search may take before it fails like any retrieval error (``None``: wait for ever)."""
    on_retrieval_error: Literal["raise", "answer_without"] = "raise"
    """A failed search raises (naming the question), or the answer goes on without it, noted in the trace."""

    _loops: LoopCache = PrivateAttr(default_factory=LoopCache)

    @field_validator("llm")
    @classmethod
    def _self_aware(cls, value: Any) -> Any:
        if value is None or isinstance(value, (SelfAwareBackend, SelfAwareModelMixin)):
            return value
        as_self_aware_model(value)  # raises the TypeError that explains what a self-aware model is
        return value  # pragma: no cover

    @field_validator("config", mode="before")
    @classmethod
    def _config(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return SeaKRConfig(**value)
        if not isinstance(value, SeaKRConfig):
            raise TypeError(f"config must be a SeaKRConfig (or a dict of its fields), got {type(value).__name__}")
        return value

    @field_validator("search_timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> Any:
        return check_search_settings(value, "raise")[0]

    @field_serializer("config")
    def _flat_config(self, config: SeaKRConfig) -> dict[str, Any]:
        """A dump shows the settings as users write them and ``_config`` reads them back: the sampling ones flat
        (``SeaKRConfig.to_dict``'s names), not nested under ``sampling``."""
        return {name: getattr(config, name) for name in config.to_dict()}

    @property
    def self_aware_model(self) -> SelfAwareModel:
        """The model as the core describes it."""
        return as_self_aware_model(self.llm)

    @property
    def backend(self) -> SelfAwareBackend:
        """The self-aware back-end (loaded on first use when ``llm`` names a model)."""
        return self.self_aware_model.resolve()

    @property
    def loop_config(self) -> SeaKRConfig:
        """The settings the loop runs with: the ``llm``'s sampling, with ``config``'s changes on top."""
        return self.self_aware_model.loop_config(self.config)

    @property
    def model_name(self) -> str:
        """The name of the model that answers."""
        return self.self_aware_model.answering_model or self.backend.model_name

    def describe(self) -> dict[str, Any]:
        """The essentials for a repr, without loading the model: model, back-end and non-default settings."""
        out: dict[str, Any] = self.self_aware_model.describe()
        changed = changed_settings(self.config)
        if changed:
            out["config"] = changed
        return out

    def seakr(self, retriever: Retriever | None = None) -> SeaKR:
        """The core loop over this component's back-end, settings and ``retriever``: built on first use and kept
        while all three stay the same (``LoopCache``)."""
        search = {"search_timeout": self.search_timeout, "on_retrieval_error": self.on_retrieval_error}
        return self._loops.get(self.backend, retriever, self.loop_config, **search)

    def __repr_args__(self) -> Any:
        """The essentials (model, back-end, changed settings, retriever type), never the index or 30 defaults."""
        args: list[tuple[str | None, Any]] = list(self.self_aware_model.describe().items())
        changed = changed_settings(self.config)
        if changed:
            args.append(("config", _Shown(f"SeaKRConfig({', '.join(f'{k}={v!r}' for k, v in changed.items())})")))
        for name, field in type(self).model_fields.items():
            if name in ("llm", "config") or field.exclude and name != "retriever":
                continue
            value = getattr(self, name, None)
            if field.is_required() or _differs(value, field.get_default(call_default_factory=True)):
                args.append((name, _short(value)))
        return args


class _Shown(str):
    """Text that a repr shows as it is (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


def _differs(value: Any, default: Any) -> bool:
    try:
        return bool(value != default)
    except Exception:  # objects whose comparison fails or is ambiguous (arrays): show them
        return True


def _short(value: Any) -> Any:
    """Plain values as they are; any object as its class name (a vector store's repr can be megabytes)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return _Shown(f"{type(value).__name__}(...)")
