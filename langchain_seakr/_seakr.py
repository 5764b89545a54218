"""The pieces every LangChain component built on the SeaKR loop shares: its back-end and its ``SeaKR`` instance."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from langchain_seakr._model import SelfAwareModelMixin, describe_llm, resolve_backend
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.reasoner import SeaKR
from seakr_integrations.retrieval.passage import Retriever

__all__ = ["SeaKRComponent", "changed_settings"]

_bind_lock = threading.Lock()  # module-level: a lock in a private attribute would break copy.deepcopy


def changed_settings(config: SeaKRConfig) -> dict[str, Any]:
    """The settings of ``config`` that differ from ``SeaKRConfig()``'s defaults (what a repr needs to show)."""
    default = SeaKRConfig()
    names = [f.name for f in dataclasses.fields(config)] if dataclasses.is_dataclass(config) else list(vars(config))
    return {n: getattr(config, n) for n in names if getattr(config, n) != getattr(default, n, None)}


class SeaKRComponent(BaseModel):
    """Holds the self-aware model (``llm``) and SeaKR's settings (``config``) for a chain, gate or re-ranker.

    ``llm`` may be a ``SeaKRLLM``, a ``ChatSeaKR``, a ``SelfAwareBackend`` or ``None`` (the default model on
    transformers, loaded once per process).  SeaKR's sampling settings (``k``, temperature, stops...) come from
    ``config``, not from the ``llm``'s fields: the loop sets them per call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Any = Field(default=None, exclude=True)
    config: SeaKRConfig = Field(default_factory=SeaKRConfig)

    _seakr: SeaKR | None = PrivateAttr(default=None)

    @field_validator("llm")
    @classmethod
    def _self_aware(cls, value: Any) -> Any:
        if value is None or isinstance(value, (SelfAwareBackend, SelfAwareModelMixin)):
            return value
        resolve_backend(value)  # raises the TypeError that explains what a self-aware model is
        return value  # pragma: no cover

    @field_validator("config", mode="before")
    @classmethod
    def _config(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return SeaKRConfig(**value)
        if not isinstance(value, SeaKRConfig):
            raise TypeError(f"config must be a SeaKRConfig (or a dict of its fields), got {type(value).__name__}")
        return value

    @property
    def backend(self) -> SelfAwareBackend:
        """The self-aware back-end (loaded on first use when ``llm`` names a model)."""
        return resolve_backend(self.llm)

    @property
    def model_name(self) -> str:
        if isinstance(self.llm, SelfAwareModelMixin):
            return self.llm.model
        return self.backend.model_name

    def describe(self) -> dict[str, Any]:
        """The essentials for a repr, without loading the model: model, back-end and non-default settings."""
        out: dict[str, Any] = describe_llm(self.llm)
        changed = changed_settings(self.config)
        if changed:
            out["config"] = changed
        return out

    def seakr(self, retriever: Retriever | None = None) -> SeaKR:
        """The core loop over this component's back-end, config and ``retriever``.

        Built on first use and kept while all three stay the same; a different retriever (an assignment, or a
        ``model_copy`` with another one), another config or another model gets a loop of its own, so a call never
        searches a retriever, or samples with settings, it was not given.
        """
        backend = self.backend
        with _bind_lock:
            bound = self._seakr
            if (
                bound is None
                or bound.backend is not backend
                or bound.retriever is not retriever
                or (bound.requested_config != self.config)
            ):
                self._seakr = SeaKR(backend, retriever, self.config)
            return self._seakr

    def __repr_args__(self) -> Any:
        """The essentials (model, back-end, changed settings, retriever type), never the index or 30 defaults."""
        args: list[tuple[str | None, Any]] = [(k, v) for k, v in describe_llm(self.llm).items()]
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
