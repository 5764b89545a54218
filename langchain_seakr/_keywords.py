"""``KnownKeywords``: the base of every pydantic class of this package, which refuses an unknown keyword argument
with the nearest valid one (``seakr_integrations.keywords``, the rule LlamaIndex's classes follow too)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from seakr_integrations.keywords import refuse_unknown_fields
from seakr_integrations.reasoning.config import SETTING_NAMES

__all__ = ["KnownKeywords"]


class KnownKeywords(BaseModel):
    """``extra="forbid"``, and a ``TypeError`` naming the nearest field for a keyword that is none (a subclass that
    also derives from a LangChain base sets ``extra="forbid"`` again: the later base's config would win)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_keywords(cls, data: Any) -> Any:
        return refuse_unknown_fields(cls, data, config_settings=SETTING_NAMES)
