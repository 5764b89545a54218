"""The pieces every LangChain component built on the SeaKR loop shares: its back-end and its ``SeaKR`` instance."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from langchain_seakr._model import SelfAwareModelMixin, resolve_backend
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.reasoner import SeaKR
from seakr_integrations.retrieval.passage import Retriever

__all__ = ["SeaKRComponent"]


class SeaKRComponent(BaseModel):
    """Holds the self-aware model (``llm``) and SeaKR's settings (``config``) for a chain, gate or re-ranker.

    ``llm`` may be a ``SeaKRLLM``, a ``ChatSeaKR``, a ``SelfAwareBackend`` or ``None`` (SmolLM2-135M-Instruct on
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

    def seakr(self, retriever: Retriever | None = None) -> SeaKR:
        """The core loop over this component's back-end and config (built once; ``retriever`` binds the first
        time)."""
        if self._seakr is None:
            self._seakr = SeaKR(self.backend, retriever, self.config)
        return self._seakr
