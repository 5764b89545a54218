"""One self-aware call scored with any estimator SeaKR's loop accepts: what a framework's LLM class does per call.
``"prompt"`` needs a second, greedy-only call (the probe), built and scored exactly as the loop does it."""

from __future__ import annotations

from collections.abc import Sequence

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.openai_plain import check_estimators
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.uncertainty.estimate import Uncertainty, estimate
from seakr_integrations.uncertainty.prompt import PROBE_TOKENS, probe_after, probe_sampling, unprobed
from seakr_integrations.uncertainty.registry import check_estimator


def prompt_fits(backend: SelfAwareBackend, prompt: str, budget: int) -> bool:
    """Whether ``prompt`` has at most ``budget`` tokens on ``backend``."""
    # Every token covers at least one byte, so a prompt with fewer bytes than the budget (plus room for the special
    # tokens a tokenizer adds) fits without tokenising it twice (the back-end tokenises it again).
    if len(prompt.encode("utf-8")) + 8 <= budget:
        return True
    return len(backend.tokenize(prompt)) <= budget


def probe_calls(
    backend: SelfAwareBackend, prompts: Sequence[str], outputs: Sequence[SelfAwareOutput], config: SamplingConfig
) -> list[tuple[str, SamplingConfig] | None]:
    """The "prompt" estimator's probe after each call (its prompt and generation, then the question; worded and
    set up by ``uncertainty.prompt``), or ``None`` where it does not fit the model's context with the probe's reply
    and the EOS read-out: the one place the probe is built, for SeaKR's loop and for a framework's LLM call."""
    sampling = probe_sampling(config)
    budget = backend.max_context - PROBE_TOKENS - 1  # the back-end's own rule: prompt + max_tokens + EOS read-out
    probes = [probe_after(p, o.greedy.text) for p, o in zip(prompts, outputs, strict=True)]
    return [(p, sampling) if prompt_fits(backend, p, budget) else None for p in probes]


def probe_uncertainty(backend: SelfAwareBackend, reply: SelfAwareOutput | None) -> Uncertainty:
    """The "prompt" estimator's score of a probe's reply; a probe that did not fit counts as uncertain."""
    if reply is None:
        return unprobed(f"the probe does not fit {backend.model_name}'s context; the model counts as uncertain")
    return estimate(reply, "prompt")


def probe_scores(
    backend: SelfAwareBackend, prompts: Sequence[str], outputs: Sequence[SelfAwareOutput], config: SamplingConfig
) -> list[Uncertainty]:
    """The "prompt" estimator's score of each finished call: one batched probe call after them."""
    probes = probe_calls(backend, prompts, outputs, config)
    sent = [p for p in probes if p is not None]
    replies = iter(backend.generate([p for p, _ in sent], [c for _, c in sent]) if sent else [])
    return [probe_uncertainty(backend, None if p is None else next(replies)) for p in probes]


def scored_generate(
    backend: SelfAwareBackend, prompts: Sequence[str], config: SamplingConfig, estimator: str, alpha: float
) -> list[tuple[SelfAwareOutput, Uncertainty]]:
    """Generate ``prompts`` and score each output with ``estimator`` (one more greedy call for ``"prompt"``).  A
    ``ValueError`` for an unknown estimator (the message lists them), one the back-end cannot feed (EigenScore on a
    plain OpenAI-compatible server), or what the back-end raises for the call."""
    estimator = check_estimator(estimator)
    check_estimators(backend, [("estimator", estimator)])
    outputs = backend.generate(list(prompts), config)
    if estimator == "prompt":
        return list(zip(outputs, probe_scores(backend, prompts, outputs, config), strict=True))
    return [(o, estimate(o, estimator, alpha)) for o in outputs]
