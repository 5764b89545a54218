"""Prompt-based uncertainty: ask the model whether it knows (SeaKR Table 3's "Prompt" ablation).

The probe's wording, call settings and scoring (``1 - P(yes)``, "higher = more uncertain") all live here; the caller
only makes the probe call and passes the reply to ``estimate(reply, "prompt")``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.uncertainty.record import Uncertainty

PROBE_TEMPLATE = (
    "Question: {question}\n"
    "Do you have sufficient knowledge to answer this question without looking anything up? "
    "Reply with Yes or No.\nReply:"
)

PROBE_SUFFIX = "\n\nDo I have sufficient knowledge to answer the question? Reply Yes or No.\nReply:"
"""Appended to a call's own prompt and generation by SeaKR's loop (estimator ``"prompt"``): the model judges the step
it just wrote with everything it was shown (passages, question, steps), and the probe shares the call's prompt as a
prefix, so a back-end with prefix caching pays only for the new tokens."""

PROBE_TOKENS = 3
"""Tokens the probe may generate ("Yes", "No" and what a tokenizer splits them into)."""

PROBE_STOP = ("\n",)
"""The reply is one line."""

_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
_NO = re.compile(r"^\W*no\b", re.IGNORECASE)


def probe_prompt(question: str, template: str = PROBE_TEMPLATE) -> str:
    """The probe to send to the model (its greedy reply is all the estimator needs)."""
    if not question.strip():
        raise ValueError("question is empty: the prompt probe asks about a question")
    return template.format(question=question.strip())


def probe_after(prompt: str, generation: str, suffix: str = PROBE_SUFFIX) -> str:
    """The probe SeaKR's loop sends after a call: the call's prompt, what the model wrote, then the question."""
    return prompt + generation.rstrip() + suffix


def probe_sampling(call: SamplingConfig) -> SamplingConfig:
    """The probe's settings: greedy reply only (``k=0``), a few tokens, one line; seed, layer, source from ``call``."""
    return SamplingConfig(
        k=0, max_tokens=PROBE_TOKENS, stop=PROBE_STOP, seed=call.seed, layer=call.layer, source=call.source
    )


def prompt_uncertainty(reply_text: str, reply_logprobs: Sequence[float]) -> float:
    """``1 - P(yes)`` from the probe's greedy reply, ``p`` being its first token's probability: a "Yes" reply gives
    ``1 - p``, a "No" reply ``p`` (all the mass not on "No" is credited to "Yes", an upper bound), any other 1.0."""
    p = math.exp(reply_logprobs[0]) if len(reply_logprobs) else 1.0
    if _YES.match(reply_text):
        return 1.0 - p
    if _NO.match(reply_text):
        return p
    return 1.0


def score(reply: SelfAwareOutput, alpha: float = 0.0) -> Uncertainty:
    """The estimator on the probe call's output ``reply`` (not on the call it asks about; ``alpha`` is unused)."""
    return Uncertainty(prompt_uncertainty(reply.greedy.text, reply.greedy.logprobs), "prompt", num_samples=0)


def unprobed(why: str) -> Uncertainty:
    """The score of a call whose probe could not be sent (``why``): the model counts as uncertain."""
    return Uncertainty(math.inf, "prompt", num_samples=0, note=why)
