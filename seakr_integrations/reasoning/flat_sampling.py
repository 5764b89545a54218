"""SeaKR's sampling settings, held in one ``SamplingConfig`` and read and written flat (``SeaKRConfig(k=10)``,
``config.k``), as users, traces and adapters name them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, Protocol, TypeVar

from seakr_integrations.keywords import check_keywords
from seakr_integrations.params import SamplingConfig


class HoldsSampling(Protocol):
    """A settings object whose sampling settings one ``SamplingConfig`` holds (``SeaKRConfig``): this module sits
    below the config it decorates, so it names only what it reads."""

    @property
    def sampling(self) -> SamplingConfig: ...


_ConfigClass = TypeVar("_ConfigClass", bound=type)
"""The settings class ``flat_sampling`` decorates and returns (``SeaKRConfig``)."""

SEAKR_SAMPLING = SamplingConfig(min_tokens=1)
"""SeaKR's sampling: ``SamplingConfig``'s defaults but ``min_tokens=1``, so that an instruct model in a chat template
does not end its turn with an empty step (which has no uncertainty); ``min_tokens=0`` is the authors' behaviour
(``docs/design/reasoning.md``)."""
SAMPLING_SETTINGS = tuple(f.name for f in fields(SamplingConfig) if f.name not in ("stop", "greedy_vector"))
"""The sampling settings ``SeaKRConfig`` takes as flat keywords and shows as flat attributes; the stops are SeaKR's
own, per call (``BASE_STOPS``, ``STEP_STOP``, ``SENTENCE_STOP``), and so is ``greedy_vector`` (asked for by a rule
that reads the model's state, ``StateProbe``)."""


RULES_HINT = (
    ". A decision rule beyond the paper's is an object in rules= (seakr_integrations.reasoning.rules: ClaimCheck(), "
    "TokenCascade()...); CHANGELOG.md lists each removed setting with what replaces it"
)
"""Added to ``SeaKRConfig``'s error for a keyword it does not know, which is often a setting that became a rule."""

SEARCH_SETTINGS = ("search_timeout", "on_retrieval_error")
"""Settings of the components that search, not of the decisions: given to ``SeaKRConfig``, the error says where."""


REMOVED_SETTINGS = (
    "base_stops",
    "step_stop",
    "sentence_stop",
    "query_max_tokens",
    "content_filter",
    "rerank",
    "chat_answer_prefix",
    "rerank_margin",
    "final_margin",
    "knowledge_needs_passages",
    "stop_on_repeated_step",
)
"""Settings ``SeaKRConfig`` took before its decision rules became objects; a results header of that time holds
them, and a near name ("did you mean 'max_steps'?") would mislead."""


def _refuse_removed_setting(owner: str, given: Mapping[str, Any]) -> None:
    """A setting removed when the rules became objects is named as such, with where to read an old header."""
    removed = [name for name in given if name in REMOVED_SETTINGS]
    if removed:
        raise TypeError(
            f"{owner} got {', '.join(map(repr, removed))}: settings removed when the decision rules became objects "
            "(rules=...; CHANGELOG.md says what replaced each). Settings from a results file's header of that time: "
            "read them with seakr_integrations.evaluation.results.run_settings(path), which says what it ran"
        )


def _refuse_search_setting(owner: str, given: Mapping[str, Any]) -> None:
    """A search setting given to the config is refused with the components that take it."""
    for name in SEARCH_SETTINGS:
        if name in given:
            raise TypeError(
                f"{owner} got an unexpected keyword argument {name!r}: it is a setting of the component that searches, "
                f"not of the decisions; pass it there: SeaKR(backend, retriever, config, {name}=...), "
                f"SeaKRChain(..., {name}=...), SeaKRMiddleware(..., {name}=...), the gated retrievers, "
                f"SeaKRQueryEngine(..., {name}=...), SeaKRWorkflow(..., {name}=...)"
                + (" (seakr ask and eval: --search-timeout)" if name == "search_timeout" else "")
            )


class _FromSampling:
    """``config.k`` reads ``config.sampling.k``, read-only, as users write it (``SeaKRConfig(k=10)``) and the loop,
    traces and adapters read it; on the class, SeaKR's default."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, config: HoldsSampling | None, owner: type | None = None) -> Any:
        return getattr(SEAKR_SAMPLING if config is None else config.sampling, self.name)


def flat_sampling(cls: _ConfigClass) -> _ConfigClass:
    """Let ``SeaKRConfig`` take and show its sampling settings flat, one ``SamplingConfig`` holding them:
    ``SeaKRConfig(k=10)`` applies ``k=10`` to ``sampling`` (``SEAKR_SAMPLING`` unless given), and so does
    ``config.with_(k=5)`` (``dataclasses.replace`` passes ``sampling`` and the change here).  A mapping for
    ``sampling`` (the nested JSON form, e.g. pydantic's dump of a component) is read as a ``SamplingConfig``."""
    fields_init: Callable[..., None] = cls.__init__

    @functools.wraps(fields_init)
    def __init__(self: Any, *args: Any, sampling: Any = SEAKR_SAMPLING, **kwargs: Any) -> None:
        valid = [f.name for f in fields(cls)] + list(SAMPLING_SETTINGS)
        _refuse_removed_setting(cls.__name__, kwargs)  # first: an old header holds the search settings too
        _refuse_search_setting(cls.__name__, kwargs)
        check_keywords(cls.__name__, kwargs, valid, hint=RULES_HINT)  # a mistyped setting names the nearest one
        flat = {name: kwargs.pop(name) for name in SAMPLING_SETTINGS if name in kwargs}
        if isinstance(sampling, Mapping):
            sampling = SamplingConfig(**sampling)
        if not isinstance(sampling, SamplingConfig):
            raise ValueError(f"sampling={sampling!r}: pass a SamplingConfig, or the settings as keywords (k=10)")
        fields_init(self, *args, sampling=sampling.with_(**flat) if flat else sampling, **kwargs)

    cls.__init__ = __init__  # type: ignore[method-assign]
    for name in SAMPLING_SETTINGS:
        setattr(cls, name, _FromSampling(name))
    return cls
