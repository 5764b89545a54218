"""What ``seakr calibrate`` measures beside delta: the labels the gate is judged by and the verdict on each gate
signal (the ``state-probe`` rule's probe is learnt from the same labels: ``probe_learning``).

Labels come from two cheap baselines on the calibration questions themselves (closed-book chain of thought and
single retrieval: about three LM calls and one search a question), so a verdict needs no other data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.evaluation.verdict import gate_verdict
from seakr_integrations.reasoning.baselines import ChainOfThought, SingleRetrieval
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.records import Assessment
from seakr_integrations.uncertainty.estimate import estimate

__all__ = ["baseline_f1", "gate_verdicts"]


def baseline_f1(
    backend: SelfAwareBackend, retriever: Any, config: SeaKRConfig, questions: Sequence[Question], **search: Any
) -> tuple[list[float], list[float]]:
    """Each question's F1 closed-book (chain of thought) and with one retrieval, with ``config``'s prompt."""
    texts = [q.question for q in questions]
    out = []
    for method in (ChainOfThought, SingleRetrieval):
        results = method(backend, retriever, config, **search).answer_many(texts)
        out.append([score(r.answer, q.answers).f1 for r, q in zip(results, questions, strict=True)])
    return out[0], out[1]


def gate_verdicts(
    config: SeaKRConfig,
    assessed: Sequence[Assessment],
    cot: Sequence[float],
    single: Sequence[float],
    target_rate: float | None,
) -> dict[str, dict[str, Any]]:
    """The verdict on the gate's estimator and on the cascade's greedy signal, by signal name."""
    first = [a.uncertainty.value for a in assessed]
    out = {config.estimator: gate_verdict(config.estimator, first, cot, single, target_rate=target_rate).to_dict()}
    screen = config.rule_set.reads().screen
    if screen is not None:
        readings = [estimate(a.output, screen).value for a in assessed]
        out[screen] = gate_verdict(screen, readings, cot, single, target_rate=target_rate).to_dict()
    return out
