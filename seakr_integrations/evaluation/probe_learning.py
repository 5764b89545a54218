"""What the ``state-probe`` rule learns in a calibration: a linear probe for "retrieval helps" on the first step's
hidden state, its threshold and its verdict.  It reads the calibration's evidence (``calibration_evidence``) through
the members it names, so that the rule imports it without importing the calibration."""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from seakr_integrations.evaluation.probe_fit import choose_and_fit, cross_validated
from seakr_integrations.evaluation.verdict import MIN_QUESTIONS, gate_verdict

__all__ = [
    "MIN_PROBE_LABELS",
    "MIN_PROBE_QUESTIONS",
    "PROBE_GROUPS",
    "ProbeNotTrainedWarning",
    "check_probe_learning",
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


def check_probe_learning(evidence: Any, rule: str) -> None:
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


def learn_probe(evidence: Any, rule: str) -> dict[str, Any] | None:
    """The ``state-probe`` rule's learning (``rule``: its name): :func:`check_probe_learning`, then
    :func:`train_probe`; ``None`` with a :class:`ProbeNotTrainedWarning` when the labels cannot train one (delta and
    the verdicts are still worth saving)."""
    check_probe_learning(evidence, rule)
    try:
        return train_probe(evidence)
    except ValueError as err:
        warnings.warn(f"no state probe stored: {err}", ProbeNotTrainedWarning, stacklevel=3)
        return None


def train_probe(evidence: Any) -> dict[str, Any]:
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
