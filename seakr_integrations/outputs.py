"""Output records of a self-aware LM call: the greedy step and the k samples whose EOS hidden states measure the
model's self-consistency, in the same shape from every back-end, so estimators and the loop never see a back-end's
native objects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Literal

import numpy as np

__all__ = ["Continuation", "FinishReason", "SelfAwareOutput", "text_pieces", "token_offsets"]

FinishReason = Literal["stop", "length"]
"""``"stop"``: the model emitted EOS or a stop string matched; ``"length"``: ``max_tokens`` was reached (vLLM's
vocabulary)."""


@dataclass
class Continuation:
    """One generated continuation of a prompt.

    Attributes:
        text: Decoded text, special tokens skipped, cut before a matched stop string.
        token_ids: Every generated token id, including a final EOS or the token that completed a stop string.
        logprobs: Each token's log-probability under the raw distribution (before temperature, top-k and top-p).
        finish_reason: Why generation ended.
        stop_reason: The stop string that matched, or ``None`` (EOS or length).
        eos_vector: Float32 ``(hidden_size,)`` hidden state, EOS as input after the text (SPEC section 2): every
            sample's, and the greedy continuation's when ``SamplingConfig.greedy_vector`` asked for it.
        logit_lse: ``logsumexp`` of the raw logits at each generated position (the energy estimator's), ``None`` where
            the back-end exposes no logits (``VLLMBackend`` reads them in the engine, for the greedy one only).
        offsets: Where each token ends in ``text`` (query masking), when a server sent it (:func:`token_offsets`).
    """

    text: str
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    stop_reason: str | None = None
    eos_vector: np.ndarray | None = field(default=None, repr=False)
    logit_lse: list[float] | None = field(default=None, repr=False)
    offsets: list[int] | None = field(default=None, repr=False)


@dataclass
class SelfAwareOutput:
    """Everything one prompt produced in a self-aware call: the greedy step and the k samples.

    Attributes:
        prompt: The prompt text as given.
        prompt_token_ids: Its token ids as the back-end tokenised it.
        greedy: The greedy (temperature 0) continuation.
        samples: The k sampled continuations, each with an ``eos_vector``.
        layer: The 0-based decoder layer the vectors were read from.
        source: ``"mlp"`` (that layer's MLP output) or ``"residual"`` (the residual stream after the layer).
        scores: Uncertainties a ``seakr serve`` server computed, by estimator (``estimate`` returns them if no vectors).
    """

    prompt: str
    prompt_token_ids: list[int]
    greedy: Continuation
    samples: list[Continuation]
    layer: int
    source: str
    scores: dict[str, Any] = field(default_factory=dict, repr=False)

    def generated_tokens(self) -> int:
        """Tokens generated for this prompt: the greedy continuation and every sample (the cost of the call)."""
        return len(self.greedy.token_ids) + sum(len(s.token_ids) for s in self.samples)

    def eos_vectors(self) -> np.ndarray:
        """The samples' EOS vectors stacked as a ``(k, hidden_size)`` float32 array."""
        vectors = [s.eos_vector for s in self.samples]
        if any(v is None for v in vectors):
            raise ValueError("some samples carry no eos_vector; this output was not produced by a self-aware call")
        return np.stack(vectors).astype(np.float32, copy=False)  # type: ignore[arg-type]


def text_pieces(continuation: Continuation, decode: Callable[[list[int]], str]) -> list[str]:
    """``continuation.text`` cut into one piece per token at :func:`token_offsets` (the offsets a server sent, so no
    tokenizer round trip per token; else where growing prefixes decode), for replaying a finished generation as a
    stream; the pieces join to exactly the text (``[""]`` when empty), and a character is never cut.
    ``decode``: token ids to text with special tokens skipped (``tok.decode(ids, skip_special_tokens=True)``)."""
    text, pieces, shown = continuation.text, [], 0
    for end in token_offsets(continuation, decode):
        end = min(end, len(text))
        if end > shown:
            pieces.append(text[shown:end])
            shown = end
    if len(text) > shown:
        pieces.append(text[shown:])
    return pieces or [""]


def token_offsets(continuation: Continuation, decode: Callable[[list[int]], str]) -> list[int]:
    """Where each of ``continuation``'s tokens ends in its text: its ``offsets`` when the back-end sent them, else
    found by decoding growing prefixes (a multi-byte character split across tokens ends at its last token)."""
    if continuation.offsets is not None:
        return list(continuation.offsets)
    text, ids = continuation.text, continuation.token_ids
    ends = (min(len(decode(list(ids[:n]))), len(text)) for n in range(1, len(ids) + 1))
    return list(accumulate(ends, max))  # a token never ends before the one it follows
