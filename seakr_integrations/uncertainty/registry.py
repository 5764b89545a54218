"""The estimators SeaKR's loop accepts, each declared once with what it needs from the model.

Every place that offers a choice of estimator reads ``REGISTRY``, so an estimator added here is accepted everywhere;
a caller that can provide only some inputs asks ``estimators_for`` (docs/design/core.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.eigenscore import score as eigenscore_score
from seakr_integrations.uncertainty.energy import score as energy_score
from seakr_integrations.uncertainty.ln_entropy import score as ln_entropy_score
from seakr_integrations.uncertainty.min_token_prob import score as min_token_prob_score
from seakr_integrations.uncertainty.multi_perplexity import score as multi_perplexity_score
from seakr_integrations.uncertainty.perplexity import score as perplexity_score
from seakr_integrations.uncertainty.prompt import score as prompt_score
from seakr_integrations.uncertainty.record import Uncertainty

NEEDS = frozenset({"samples", "vectors", "greedy_logprobs", "sample_logprobs", "logits", "probe"})
"""What an estimator can need: the k ``samples``, their EOS ``vectors``, the greedy continuation's log-probabilities
(``greedy_logprobs``), the samples' (``sample_logprobs``), the raw ``logits``' logsumexp (not every back-end has
them), or a ``probe``: a second LM call that asks the model about its own answer."""

GENERATE_PROVIDES = NEEDS - {"probe"}
"""What one self-aware generate call returns (``logits`` only where the back-end exposes them)."""

Scorer = Callable[[SelfAwareOutput, float], Uncertainty]
"""``score(output, alpha) -> Uncertainty``; for ``"probe"`` estimators ``output`` is the probe call's reply."""


@dataclass(frozen=True)
class Estimator:
    """One uncertainty estimator ("higher = more uncertain").

    Attributes:
        name: What users pass (``SeaKRConfig(estimator=name)``).
        needs: A subset of ``NEEDS``.
        summary: One line for help texts.
        score: Its ``Scorer``; use it through ``estimate(output, name)``, which also returns a server's scores.
    """

    name: str
    needs: frozenset[str]
    summary: str
    score: Scorer = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = set(self.needs) - NEEDS
        if unknown:
            raise ValueError(f"estimator {self.name!r} needs {sorted(unknown)}: not among {sorted(NEEDS)}")


REGISTRY: dict[str, Estimator] = {
    e.name: e
    for e in (
        Estimator(
            "eigenscore",
            frozenset({"samples", "vectors"}),
            "SeaKR: log-determinant of the samples' EOS Gram matrix",
            eigenscore_score,
        ),
        Estimator(
            "perplexity", frozenset({"greedy_logprobs"}), "perplexity of the greedy continuation", perplexity_score
        ),
        Estimator(
            "min_token_prob",
            frozenset({"greedy_logprobs"}),
            "1 - the probability of the greedy continuation's least likely token",
            min_token_prob_score,
        ),
        Estimator(
            "multi_perplexity",
            frozenset({"samples", "sample_logprobs"}),
            "mean perplexity of the k samples",
            multi_perplexity_score,
        ),
        Estimator(
            "ln_entropy",
            frozenset({"samples", "sample_logprobs"}),
            "length-normalised entropy of the samples",
            ln_entropy_score,
        ),
        Estimator(
            "energy", frozenset({"logits"}), "mean -logsumexp of the greedy continuation's raw logits", energy_score
        ),
        Estimator("prompt", frozenset({"probe"}), "1 - P(yes) when the model is asked whether it knows", prompt_score),
    )
}
"""Every estimator, by name, in the order help texts list them."""


def estimator_names() -> tuple[str, ...]:
    """Every estimator SeaKR's loop accepts (``"prompt"`` included)."""
    return tuple(REGISTRY)


def estimators_for(provides: Iterable[str] = GENERATE_PROVIDES) -> tuple[str, ...]:
    """The estimators whose needs are all in ``provides`` (default: what one generate call returns, with logits)."""
    have = frozenset(provides)
    return tuple(e.name for e in REGISTRY.values() if e.needs <= have)


def check_estimator(name: object) -> str:
    """``name`` if it is a registered estimator, else a ``ValueError`` that lists the choices."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"estimator={name!r}: choose one of {', '.join(REGISTRY)}")
    return name
