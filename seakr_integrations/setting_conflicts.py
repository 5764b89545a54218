"""Settings that contradict each other, refused where they are given (both adapters' models and gates) rather than
one of them silently losing."""

from __future__ import annotations

from typing import Any

from seakr_integrations.models import DEFAULT_MODEL

__all__ = ["SEARCH_SETTINGS", "gate_never_searches", "model_place_conflict", "searches_nothing"]

SEARCH_SETTINGS = frozenset({"search_timeout", "on_retrieval_error"})
"""The settings of a component that searches; refused by one that does not (a re-ranker, the gate tool)."""


def model_place_conflict(owner: str, backend: Any, model: Any, base_url: Any) -> str | None:
    """Why ``base_url`` contradicts ``backend`` or ``model`` (a server's own model answers, so a back-end to load or
    a model name given with it would be dropped); ``None`` when they agree (the defaults do)."""
    if base_url is None:
        return None
    if backend not in (None, "hf"):
        shown = repr(backend) if isinstance(backend, str) else f"a {type(backend).__name__}"
        return (
            f"{owner} got base_url={base_url!r} and backend={shown}: the server's model answers when base_url is "
            "given, so the back-end would be dropped; pass one of them"
        )
    if model is not None and model != DEFAULT_MODEL:
        return (
            f"{owner} got base_url={base_url!r} and model={model!r}: the server's own model answers (its name is "
            "known once connected), so model= would be dropped; leave model out"
        )
    return None


def gate_never_searches(owner: str, retrieve: str) -> str | None:
    """Why a gate around a retriever cannot run with ``SeaKRConfig.retrieve`` (``"never"``: its retriever would
    never be called); ``None`` when it can."""
    if retrieve != "never":
        return None
    return (
        f"{owner} with config.retrieve='never' would never call its retriever: let the gate decide "
        "(retrieve='uncertain', the default), or leave the retriever out"
    )


def searches_nothing(owner: str, name: str, instead: str) -> TypeError:
    """The error for a search setting (``name``) given to ``owner``, which searches nothing; ``instead`` names the
    components that would use it."""
    return TypeError(f"{owner} searches nothing, so {name}= would do nothing: give it to {instead}")
