"""What a ``POST /v1/seakr/generate`` request may contain, and the server's limits, checked in one place.

A request names its prompts (or chat conversations) and SeaKR's sampling settings; anything wrong with it is a
``BadRequest`` whose message says which field and what to send instead, answered as HTTP 400.  The limits protect a
server shared by many apps: one request cannot ask for thousands of samples or tokens.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from typing import Any

from seakr_integrations.params import SamplingConfig
from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA
from seakr_integrations.uncertainty.registry import estimators_for

__all__ = ["BadRequest", "GenerateRequest", "Limits", "parse_generate"]


class BadRequest(ValueError):
    """A request the server refuses (HTTP 400); the message says what was wrong."""


@dataclass(frozen=True)
class Limits:
    """Per-request limits; each can be set with an environment variable ``SEAKR_SERVE_<NAME>`` (e.g.
    ``SEAKR_SERVE_MAX_K=32``) before the server starts.

    Attributes:
        max_k: Samples per prompt.
        max_tokens: Tokens generated per continuation.
        max_prompts: Prompts (or conversations) per request.
        max_prompt_chars: Characters per prompt (the token limit is the model's context, checked after
            tokenising).
    """

    max_k: int = 64
    max_tokens: int = 1024
    max_prompts: int = 64
    max_prompt_chars: int = 200_000

    @classmethod
    def from_environment(cls) -> Limits:
        values = {}
        for f in fields(cls):
            raw = os.environ.get(f"SEAKR_SERVE_{f.name.upper()}")
            if raw is not None:
                try:
                    values[f.name] = int(raw)
                except ValueError:
                    raise ValueError(f"SEAKR_SERVE_{f.name.upper()}={raw!r}: must be an integer") from None
        return cls(**values)


@dataclass(frozen=True)
class GenerateRequest:
    """A checked request: prompts or conversations, one sampling config for all, what to return."""

    prompts: list[str] | None
    messages: list[list[dict[str, str]]] | None
    config: SamplingConfig
    estimators: tuple[str, ...]
    alpha: float
    return_vectors: bool
    vector_dtype: str

    @property
    def count(self) -> int:
        return len(self.prompts if self.prompts is not None else self.messages or [])


_SAMPLING = ("k", "temperature", "top_k", "top_p", "max_tokens", "min_tokens", "stop", "seed", "layer", "source")
_KNOWN = {*_SAMPLING, "prompts", "messages", "estimators", "alpha", "return_vectors", "vector_dtype", "model"}


def parse_generate(body: Any, limits: Limits) -> GenerateRequest:
    """Check a request body; raises ``BadRequest`` naming the field and the fix."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object with 'prompts' (or 'messages') and settings")
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        raise BadRequest(f"unknown field(s) {unknown}: the known ones are {sorted(_KNOWN)}")
    prompts, messages = body.get("prompts"), body.get("messages")
    if (prompts is None) == (messages is None):
        raise BadRequest("give exactly one of 'prompts' (a list of strings) or 'messages' (a list of conversations)")
    items = prompts if prompts is not None else messages
    if not isinstance(items, list) or not items:
        raise BadRequest("'prompts' / 'messages' must be a non-empty list")
    if len(items) > limits.max_prompts:
        raise BadRequest(
            f"{len(items)} prompts in one request: the limit (max_prompts) is {limits.max_prompts}; split the request"
        )
    if prompts is not None:
        for i, p in enumerate(prompts):
            if not isinstance(p, str) or not p.strip():
                raise BadRequest(f"prompt {i} is empty or not a string")
            if len(p) > limits.max_prompt_chars:
                raise BadRequest(
                    f"prompt {i} has {len(p)} characters: the limit (max_prompt_chars) is {limits.max_prompt_chars}"
                )
    else:
        for i, conversation in enumerate(messages):
            if not isinstance(conversation, list) or not conversation or not all(_is_message(m) for m in conversation):
                raise BadRequest(
                    f"messages[{i}] must be a non-empty list of {{'role': ..., 'content': ...}} objects with strings"
                )
            if sum(len(m["content"]) for m in conversation) > limits.max_prompt_chars:
                raise BadRequest(f"messages[{i}] is longer than the limit (max_prompt_chars) {limits.max_prompt_chars}")
    settings = {name: body[name] for name in _SAMPLING if name in body and body[name] is not None}
    k, max_tokens = settings.get("k", SamplingConfig.k), settings.get("max_tokens", SamplingConfig.max_tokens)
    if isinstance(k, int) and k > limits.max_k:
        raise BadRequest(f"k={k}: the limit (max_k) is {limits.max_k} samples per prompt")
    if isinstance(max_tokens, int) and max_tokens > limits.max_tokens:
        raise BadRequest(f"max_tokens={max_tokens}: the limit (max_tokens) is {limits.max_tokens}")
    if "stop" in settings and (not isinstance(settings["stop"], list)):
        raise BadRequest(f"stop={settings['stop']!r}: must be a list of strings")
    try:
        config = SamplingConfig(**settings)  # types, finiteness and ranges are checked there, as for every caller
    except (TypeError, ValueError) as exc:
        raise BadRequest(str(exc)) from None
    estimators = body.get("estimators", ["eigenscore"])
    served = estimators_for()  # what one generate call can feed: not the prompt probe, a call of its own
    if not isinstance(estimators, list) or any(e not in served for e in estimators):
        raise BadRequest(
            f"estimators={estimators!r}: choose from {list(served)} (the prompt probe is a call of its own)"
        )
    alpha = body.get("alpha", DEFAULT_ALPHA)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < math.inf:
        raise BadRequest(
            f"alpha={alpha!r}: EigenScore's ridge must be a positive finite number (default {DEFAULT_ALPHA})"
        )
    vector_dtype = body.get("vector_dtype", "float16")
    if vector_dtype not in ("float16", "float32"):
        raise BadRequest(f"vector_dtype={vector_dtype!r}: choose 'float16' or 'float32'")
    return GenerateRequest(
        prompts,
        messages,
        config,
        tuple(dict.fromkeys(estimators)),
        float(alpha),
        bool(body.get("return_vectors", False)),
        vector_dtype,
    )


def _is_message(m: Any) -> bool:
    return isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
