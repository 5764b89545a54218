"""The estimators SeaKR's loop accepts, each declared once with what it needs from the model.

Everything that offers a choice of estimator (``SeaKRConfig``, the CLI, both framework adapters, ``seakr serve``)
reads its choices from ``REGISTRY``, so an estimator added here is accepted everywhere at once, and a caller that
can only provide some inputs (a server answering one generate call has no probe call) filters on ``needs``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NEEDS", "REGISTRY", "Estimator", "check_estimator", "estimator_names"]

NEEDS = frozenset({"samples", "vectors", "greedy_logprobs", "sample_logprobs", "logits", "probe"})
"""What an estimator can need: the k ``samples``, their EOS ``vectors``, the greedy continuation's log-probabilities
(``greedy_logprobs``), the samples' (``sample_logprobs``), the raw ``logits``' logsumexp (not every back-end has
them), or a ``probe``: a second LM call that asks the model about its own answer."""


@dataclass(frozen=True)
class Estimator:
    """One uncertainty estimator ("higher = more uncertain").

    Attributes:
        name: What users pass (``SeaKRConfig(estimator=name)``).
        needs: A subset of ``NEEDS``.
        summary: One line for help texts.
    """

    name: str
    needs: frozenset[str]
    summary: str

    def __post_init__(self) -> None:
        unknown = set(self.needs) - NEEDS
        if unknown:
            raise ValueError(f"estimator {self.name!r} needs {sorted(unknown)}: not among {sorted(NEEDS)}")


REGISTRY: dict[str, Estimator] = {
    e.name: e
    for e in (
        Estimator(
            "eigenscore", frozenset({"samples", "vectors"}), "SeaKR: log-determinant of the samples' EOS Gram matrix"
        ),
        Estimator("perplexity", frozenset({"greedy_logprobs"}), "perplexity of the greedy continuation"),
        Estimator("multi_perplexity", frozenset({"samples", "sample_logprobs"}), "mean perplexity of the k samples"),
        Estimator("ln_entropy", frozenset({"samples", "sample_logprobs"}), "length-normalised entropy of the samples"),
        Estimator("energy", frozenset({"logits"}), "mean -logsumexp of the greedy continuation's raw logits"),
        Estimator("prompt", frozenset({"probe"}), "1 - P(yes) when the model is asked whether it knows"),
    )
}
"""Every estimator, by name, in the order help texts list them."""


def estimator_names() -> tuple[str, ...]:
    """Every estimator SeaKR's loop accepts (``"prompt"`` included)."""
    return tuple(REGISTRY)


def check_estimator(name: object) -> str:
    """``name`` if it is a registered estimator.

    Raises:
        ValueError: Otherwise; the message lists the choices.
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"estimator={name!r}: choose one of {', '.join(REGISTRY)}")
    return name
