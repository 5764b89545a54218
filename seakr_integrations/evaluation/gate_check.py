"""What ``seakr calibrate`` measures beside delta: the labels the gate is judged by, the verdict on each gate signal,
and a linear probe on the first step's hidden state (what the ``state-probe`` rule learns: :func:`learn_probe`).

Labels come from two cheap baselines on the calibration questions themselves (closed-book chain of thought and
single retrieval: about three LM calls and one search a question), so a verdict needs no other data.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.evaluation.probe_fit import choose_and_fit, cross_validated
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.evaluation.verdict import MIN_QUESTIONS, gate_verdict
from seakr_integrations.reasoning.baselines import ChainOfThought, SingleRetrieval
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.records import Assessment
from seakr_integrations.uncertainty.estimate import estimate

if TYPE_CHECKING:
    from seakr_integrations.evaluation.calibration_evidence import CalibrationEvidence

__all__ = [
    "MIN_PROBE_LABELS",
    "MIN_PROBE_QUESTIONS",
    "PROBE_GROUPS",
    "ProbeNotTrainedWarning",
    "baseline_f1",
    "check_probe_learning",
    "gate_verdicts",
    "learn_probe",
    "train_probe",
]

PROBE_GROUPS = 5
"""Question ``i`` is in group ``i % 5`` when the probe's penalty is chosen and its AUROC measured."""

MIN_PROBE_LABELS = PROBE_GROUPS
"""A probe is trained only when each label ("retrieval helps" and not) has at least this many questions, one per
group: with fewer, its penalty and threshold would be chosen on groups that hold no example of one of them."""

MIN_PROBE_QUESTIONS = max(MIN_QUESTIONS, 2 * MIN_PROBE_LABELS)
"""The fewest calibration questions a probe trains on: fewer get no labels (no verdict below ``MIN_QUESTIONS``), and
each label needs ``MIN_PROBE_LABELS`` questions."""


class ProbeNotTrainedWarning(UserWarning):
    """``seakr calibrate`` with the ``state-probe`` rule stored no probe (its labels could not train one); delta and
    the verdicts are saved all the same."""


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


def check_probe_learning(evidence: CalibrationEvidence, rule: str) -> None:
    """Refuse, before the calibration's first LM call, a probe that could not be trained: too few questions to hold
    both labels (``MIN_PROBE_QUESTIONS``), or a back-end that reads no hidden states (a plain OpenAI-compatible
    server; not checked while ``evidence`` has no back-end yet).  ``rule``: the learning rule's name.

    Raises:
        ValueError: Saying what the probe needs and what to do.
    """
    questions = len(evidence.questions)
    if questions < MIN_PROBE_QUESTIONS:
        raise ValueError(
            f"the {rule} rule trains its probe on at least {MIN_PROBE_QUESTIONS} calibration questions "
            f"({MIN_PROBE_LABELS} where retrieval helps and {MIN_PROBE_LABELS} where it does not), and {questions} "
            f"were given: calibrate on more questions (100 HotpotQA questions gave 27 where it helped), or leave "
            f"{rule} out of the rules"
        )
    backend = evidence.backend
    if backend is None or getattr(backend, "reads_hidden_states", True):
        return
    where = getattr(backend, "base_url", None)
    raise ValueError(
        f"the {rule} rule trains its probe on the first step's hidden state, and {backend.model_name} is served by a "
        f"plain OpenAI-compatible server{f' at {where}' if where else ''}, which returns token log-probabilities "
        "only: serve the model with `seakr serve MODEL` (seakr's routes read hidden states) or run it in-process (an "
        f"HF or vLLM back-end: --backend hf or vllm, no --server), or leave {rule} out of the rules"
    )


def learn_probe(evidence: CalibrationEvidence, rule: str) -> dict[str, Any] | None:
    """The ``state-probe`` rule's learning (``rule``: its name): :func:`check_probe_learning`, then
    :func:`train_probe`; ``None`` with a :class:`ProbeNotTrainedWarning` when the labels cannot train one (delta and
    the verdicts are still worth saving)."""
    check_probe_learning(evidence, rule)
    try:
        return train_probe(evidence)
    except ValueError as err:
        warnings.warn(f"no state probe stored: {err}", ProbeNotTrainedWarning, stacklevel=3)
        return None


def train_probe(evidence: CalibrationEvidence) -> dict[str, Any]:
    """A linear probe for "retrieval helps" on the first step's hidden state at EOS (the read-out layer and source),
    its penalty chosen by cross-validation over ``PROBE_GROUPS`` groups; its threshold at the target rate (else 0.5)
    and its verdict, both from probabilities of questions the probe was not fitted on.  Returns the ``state-probe``
    rule's learned state (``PROBE_ENTRY``)."""
    cot, single = evidence.labels()
    helps = np.asarray(single) > np.asarray(cot)
    if min(int(helps.sum()), int((~helps).sum())) < MIN_PROBE_LABELS:
        raise ValueError(
            f"retrieval helped on {int(helps.sum())} of {len(helps)} calibration questions: a probe needs at least "
            f"{MIN_PROBE_LABELS} questions with each label; calibrate on more questions (100 HotpotQA questions gave "
            "27 where it helped)"
        )
    source, target_rate = evidence.config.source, evidence.target_rate
    vectors = {source: evidence.state_vectors()[:, None, :]}
    groups = np.arange(len(helps)) % PROBE_GROUPS
    held_out, _ = cross_validated(vectors, helps, groups, layers=[0])
    trained_on = {"dataset": evidence.dataset, "questions": len(helps),
                  "label": "single retrieval's F1 above closed-book's"}  # fmt: skip
    probe, choice = choose_and_fit(vectors, helps, groups, layers=[0], label="retrieval helps", trained_on=trained_on)
    # fitted on the one read-out layer, given to it as layer 0; trained on the calibrated model, which it records
    probe = replace(probe, layer=evidence.layer, model=evidence.backend.model_name)
    # the threshold from probabilities of questions the probe was not fitted on, as a new question's will be (a
    # probe's own training questions get probabilities near 0 and 1)
    threshold = float(np.quantile(held_out, 1.0 - target_rate)) if target_rate is not None else 0.5
    verdict = gate_verdict("state probe", held_out, cot, single, target_rate=target_rate)
    return {"probe": probe.to_dict(), "threshold": threshold, "penalty_inner_auroc": choice.inner_auroc,
            "verdict": verdict.to_dict()}  # fmt: skip
