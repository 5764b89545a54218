"""Sampling parameters of one self-aware LM call, with the SeaKR authors' defaults (SPEC section 4)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

__all__ = [
    "MAX_K",
    "MAX_TOKENS",
    "HiddenSource",
    "SamplingConfig",
    "check_choice",
    "check_flag",
    "check_int",
    "check_real",
    "check_seconds",
    "choices",
    "max_tokens_too_large",
]

HiddenSource = Literal["mlp", "residual"]

MAX_K = 256
"""The most samples one call may draw.  SeaKR uses 20 and EigenScore gains little past a few dozen, while the cost grows
with k (k continuations, and a k x k matrix per call): a typo such as ``k=10**9`` would build a list of a billion
samples and exhaust the machine's memory before any error.  A server has its own, lower cap (``SEAKR_SERVE_MAX_K``)."""

MAX_TOKENS = 32_768
"""The most tokens one continuation may be asked for: more than any context this package's models have, so a value
above it is a mistake (``max_tokens=10**9``); the model's own context is checked when it is known
(``SelfAwareBackend.generate``, ``SeaKR``)."""


def max_tokens_too_large(max_tokens: int, model: str, context: int) -> str:
    """Why ``max_tokens`` cannot run on a model whose context is ``context`` tokens: it leaves no room for a prompt
    (the continuation, and the EOS read-out, share the context with the prompt)."""
    return (
        f"max_tokens={max_tokens:,} leaves no room for a prompt in {model}'s context of {context:,} tokens (the "
        f"continuation and the prompt share it): pass a max_tokens well below {context:,}, e.g. "
        f"{min(SamplingConfig.max_tokens, max(1, context // 4))}"
    )


def choices(literal: Any) -> tuple[str, ...]:
    """The values a ``Literal`` type allows, in order: what a config field checks and what the CLI offers."""
    return tuple(get_args(literal))


def check_choice(name: str, value: object, literal: Any, note: str = "") -> str:
    """``value`` if ``literal`` (a ``Literal`` type) allows it, else a ``ValueError`` naming the field, the value
    and the choices (``note``: what the first choice means, e.g. ``"SeaKR"``)."""
    allowed = choices(literal)
    if value not in allowed:
        shown = ", ".join(repr(c) + (f" ({note})" if note and i == 0 else "") for i, c in enumerate(allowed))
        raise ValueError(f"{name}={value!r}: choose one of {shown}")
    return str(value)


def check_flag(name: str, value: object, refusal: str, none: bool = False) -> None:
    """A ``ValueError`` ``"name=value: refusal"`` unless ``value`` is True or False (or None, with ``none``)."""
    if not (isinstance(value, bool) or (none and value is None)):
        raise ValueError(f"{name}={value!r}: {refusal}")


def check_real(
    name: str,
    value: object,
    expected: str,
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
    refusal: str = "",
    raw: bool = False,
) -> float:
    """``value`` as a float when it is a finite real number in ``[low, high]`` (``open_low``: ``(low, high]``), else a
    ``ValueError`` naming the field: ``expected`` says what to pass, ``refusal`` (default ``"must be " + expected``)
    why a value out of range is refused, shown as the float (``raw``: as passed).  A bool, a string, NaN or an infinity
    is refused at construction: each would otherwise pass the range checks (NaN compares false with everything) or
    fail far away inside the loop."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r}: must be a finite number; pass {expected}")
    number = float(value)
    if (low is not None and (number <= low if open_low else number < low)) or (high is not None and number > high):
        raise ValueError(f"{name}={value if raw else number!r}: {refusal or 'must be ' + expected}")
    return number


def check_seconds(name: str, value: object, note: str) -> float:
    """``value`` as a positive finite number of seconds, else a ``ValueError`` ending in ``note`` (e.g. the default)."""
    return check_real(
        name, value, f"seconds > 0{note}", 0, open_low=True, refusal=f"must be > 0 seconds{note}", raw=True
    )


def check_int(
    name: str, value: object, expected: str, low: int | None = None, high: int | None = None, *, refusal: str = ""
) -> int:
    """``value`` as an int when it is an integer (``True``/``False`` and ``2.0`` are refused) in ``[low, high]``,
    else a ``ValueError`` as ``check_real``'s."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={value!r}: must be an integer; pass {expected}")
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise ValueError(f"{name}={number!r}: {refusal or 'must be ' + expected}")
    return number


@dataclass(frozen=True)
class SamplingConfig:
    """How a back-end samples and where it reads the hidden state; one greedy continuation (same ``max_tokens`` and
    ``stop``, temperature 0) is always produced next to the ``k`` samples.

    Attributes:
        k: Sampled continuations (SeaKR: 20), from 2 (EigenScore compares them) to ``MAX_K``; 0: the greedy one alone.
        temperature: Sampling temperature of the k samples.
        top_k: Keep only the ``top_k`` most likely tokens (0 or -1 disables).
        top_p: Nucleus sampling mass (1.0 disables).
        max_tokens: Maximum generated tokens per continuation, at most ``MAX_TOKENS`` and less than the model's context.
        min_tokens: EOS cannot end a continuation before this many tokens (log-probabilities stay unmasked).
        stop: Stop strings; the text is cut before the first one that appears.
        seed: Seed of the samples' random generator (same seed, same samples on the same back-end).
        layer: 0-based decoder layer whose vector is read; ``None`` means ``num_layers // 2 - 1`` (SeaKR's L/2).
        source: ``"mlp"`` (SeaKR's: the MLP output) or ``"residual"`` (the stream after the layer, HF
            ``hidden_states[layer + 1]``).
        greedy_vector: Also read the greedy continuation's vector at EOS (``layer``, ``source``), as a linear probe
            on the model's state reads it (``StateProbe``): no samples needed.
    """

    k: int = 20
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 0.9
    max_tokens: int = 100
    min_tokens: int = 0
    stop: tuple[str, ...] = ()
    seed: int = 42
    layer: int | None = None
    source: HiddenSource = "mlp"
    greedy_vector: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            raise ValueError(f"stop must be a list of strings, not the string {self.stop!r}: use stop=[{self.stop!r}]")
        object.__setattr__(self, "stop", tuple(self.stop))
        k = check_int("k", self.k, "an integer >= 2 (SeaKR uses k=20), or 0 for the greedy continuation alone")
        if k < 0 or k == 1:
            raise ValueError(
                f"k={k!r}: EigenScore compares the k samples with each other, so it needs at least 2 "
                "(SeaKR uses k=20); k=0 asks for the greedy continuation alone"
            )
        if k > MAX_K:
            raise ValueError(
                f"k={k:,}: at most {MAX_K} samples per call (SeaKR uses k=20; each sample is a whole continuation, so "
                f"the cost grows with k); pass a k from 2 to {MAX_K}"
            )
        rule = ">= 0 (SeaKR samples at 1.0)"
        temperature = check_real("temperature", self.temperature, f"a float {rule}", 0, refusal=f"must be {rule}")
        rule = "in (0, 1] (1.0 disables nucleus sampling)"
        top_p = check_real("top_p", self.top_p, f"a float {rule}", 0, 1, open_low=True, refusal=f"must be {rule}")
        rule = ">= 1, or 0 / -1 to disable"
        top_k = check_int("top_k", self.top_k, f"an integer {rule}", -1, refusal=f"must be {rule}")
        max_tokens = check_int("max_tokens", self.max_tokens, "an integer >= 1", 1)
        if max_tokens > MAX_TOKENS:
            raise ValueError(
                f"max_tokens={max_tokens:,}: at most {MAX_TOKENS:,} tokens per continuation, and less than the model's "
                f"context (SeaKR's loop writes one sentence or answer per call: {SamplingConfig.max_tokens} is the "
                "default); pass a smaller max_tokens"
            )
        min_tokens = check_int(
            "min_tokens", self.min_tokens, f"an integer from 0 to max_tokens={max_tokens}", 0, max_tokens
        )
        seed = check_int("seed", self.seed, "an integer such as 42")
        if any(not isinstance(s, str) or s == "" for s in self.stop):
            raise ValueError(f"stop={list(self.stop)!r}: every stop string must be a non-empty string")
        check_choice("source", self.source, HiddenSource)
        check_flag("greedy_vector", self.greedy_vector, "must be True or False")
        layer = self.layer
        if layer is not None:
            refusal = "must be a 0-based layer index or None for L/2 - 1"
            layer = check_int("layer", layer, "a 0-based layer index, or None for L/2 - 1", 0, refusal=refusal)
        checked = {"k": k, "temperature": temperature, "top_p": top_p, "top_k": top_k, "max_tokens": max_tokens}
        checked.update(min_tokens=min_tokens, seed=seed, layer=layer)
        for name, value in checked.items():  # plain Python numbers: numpy scalars would not survive json.dumps
            object.__setattr__(self, name, value)

    def with_(self, **changes: object) -> SamplingConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]
