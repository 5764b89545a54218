"""What ``seakr calibrate`` measures beside delta: the labels the gate is judged by, the verdict on each gate signal,
and a linear probe on the first step's hidden state (``--probe``).

Labels come from two cheap baselines on the calibration questions themselves (closed-book chain of thought and
single retrieval: about three LM calls and one search a question), so a verdict needs no other data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend, eos_scoring_sequence
from seakr_integrations.evaluation.probe_fit import choose_and_fit, cross_validated
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.evaluation.verdict import gate_verdict
from seakr_integrations.reasoning.baselines import ChainOfThought, SingleRetrieval
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.records import Assessment
from seakr_integrations.uncertainty.estimate import estimate

__all__ = ["MIN_PROBE_LABELS", "PROBE_GROUPS", "ProbeNotTrainedWarning", "baseline_f1", "gate_verdicts", "train_probe"]

PROBE_GROUPS = 5
"""Question ``i`` is in group ``i % 5`` when the probe's penalty is chosen and its AUROC measured."""

MIN_PROBE_LABELS = PROBE_GROUPS
"""A probe is trained only when each label ("retrieval helps" and not) has at least this many questions, one per
group: with fewer, its penalty and threshold would be chosen on groups that hold no example of one of them."""


class ProbeNotTrainedWarning(UserWarning):
    """``seakr calibrate --probe`` stored no probe (its labels could not train one); delta and the verdicts are
    saved all the same."""


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


def train_probe(
    backend: SelfAwareBackend,
    config: SeaKRConfig,
    assessed: Sequence[Assessment],
    cot: Sequence[float],
    single: Sequence[float],
    *,
    target_rate: float | None,
    dataset: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A linear probe for "retrieval helps" on the first step's hidden state at EOS (the read-out layer and source),
    its penalty chosen by cross-validation over ``PROBE_GROUPS`` groups; its threshold at ``target_rate`` (else 0.5)
    and its verdict, both from probabilities of questions the probe was not fitted on.  Returns
    ``(DeltaProfile.probe, verdict)``."""
    helps = np.asarray(single) > np.asarray(cot)
    if min(int(helps.sum()), int((~helps).sum())) < MIN_PROBE_LABELS:
        raise ValueError(
            f"retrieval helped on {int(helps.sum())} of {len(helps)} calibration questions: a probe needs at least "
            f"{MIN_PROBE_LABELS} questions with each label; calibrate on more questions (100 HotpotQA questions gave "
            "27 where it helped)"
        )
    layer = backend.resolve_layer(config.layer)
    sequences = [eos_scoring_sequence(a.output.prompt_token_ids, a.output.greedy.token_ids, backend.eos_token_id)
                 for a in assessed]  # fmt: skip
    vectors = {config.source: backend.last_token_vectors(sequences, layer=layer, source=config.source)[:, None, :]}
    groups = np.arange(len(assessed)) % PROBE_GROUPS
    held_out, _ = cross_validated(vectors, helps, groups, layers=[0])
    trained_on = {"dataset": dataset, "questions": len(assessed), "label": "single retrieval's F1 above closed-book's"}
    probe, choice = choose_and_fit(vectors, helps, groups, layers=[0], label="retrieval helps", trained_on=trained_on)
    probe = replace(probe, layer=layer)  # fitted on the one read-out layer, given to it as layer 0
    # the threshold from probabilities of questions the probe was not fitted on, as a new question's will be (a
    # probe's own training questions get probabilities near 0 and 1)
    threshold = float(np.quantile(held_out, 1.0 - target_rate)) if target_rate is not None else 0.5
    verdict = gate_verdict("state probe", held_out, cot, single, target_rate=target_rate)
    stored = {"probe": probe.to_dict(), "threshold": threshold, "penalty_inner_auroc": choice.inner_auroc}
    return stored, verdict.to_dict()
