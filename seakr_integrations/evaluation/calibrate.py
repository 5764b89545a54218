"""Choosing delta on labelled questions: maximise F1 over a sweep, or hit a target retrieval rate.

The sweep's thresholds are quantiles of the model's own first-step uncertainties; a ``CachedBackend`` serves the
calls the runs share, so a sweep costs a few full runs (docs/design/core.md).  Never calibrate on reported questions.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.cached import CachedBackend
from seakr_integrations.calibration import DeltaProfile, UncalibratedDeltaWarning, prompt_settings
from seakr_integrations.evaluation.calibration_evidence import CalibrationEvidence, check_learning
from seakr_integrations.evaluation.gate_check import gate_verdicts
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.evaluation.verdict import MIN_QUESTIONS
from seakr_integrations.profile_names import canonical_model_name
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.reasoner import SeaKR

MIN_POINTS = 2
"""The fewest quantile thresholds a sweep takes: the lowest and the highest first-step uncertainty."""

Objective = Literal["f1", "rate"]


class CalibrationIncomplete(RuntimeError):
    """A stage after the sweep failed (the gate's verdict, a rule's learning): ``partial`` is the profile the sweep
    made, its delta chosen, without what that stage would have added, so a caller can keep it."""

    def __init__(self, message: str, partial: DeltaProfile) -> None:
        super().__init__(message)
        self.partial = partial


def _spelt(names: Mapping[str, str] | None, name: str, value: object) -> str:
    """How the caller spells ``name`` given ``value``: ``target_rate=5`` in Python, ``--target-rate 5`` on the
    command line (``names`` maps each parameter to its option there)."""
    option = (names or {}).get(name)
    if option is None:
        return f"{name}={value!r}"
    return f"{option} {value:g}" if isinstance(value, float) else f"{option} {value}"


def check_settings(
    *,
    objective: str,
    target_rate: float | None,
    points: int,
    names: Mapping[str, str] | None = None,
) -> None:
    """Refuse the settings that would otherwise fail only after the sweep, its LM calls spent.

    ``target_rate`` is checked under either objective: with ``"f1"`` it still sets the verdict's realised-rate check
    and what a rule learns at that rate (the state probe's threshold).  ``names`` maps parameters to the options a
    caller spells them with (the CLI's).

    Raises:
        ValueError: Naming the setting, what is wrong with it and the values it takes.
    """
    if objective not in ("f1", "rate"):
        raise ValueError(
            f"{_spelt(names, 'objective', objective)}: choose 'f1' (maximise F1) or 'rate' (reach a retrieval rate)"
        )
    if objective == "rate" and target_rate is None:
        raise ValueError(
            f"{_spelt(names, 'objective', objective)} needs {(names or {}).get('target_rate', 'target_rate')} R: the "
            "fraction of first steps that should retrieve, in [0, 1]"
        )
    if target_rate is not None and not 0.0 <= target_rate <= 1.0:
        raise ValueError(
            f"{_spelt(names, 'target_rate', target_rate)}: the fraction of first steps that should retrieve must be "
            "in [0, 1] (0.3: three in ten)"
        )
    if isinstance(points, bool) or not isinstance(points, int) or points < MIN_POINTS:
        raise ValueError(
            f"{_spelt(names, 'points', points)}: the sweep needs at least {MIN_POINTS} thresholds (the lowest and the "
            "highest first-step uncertainty; always and never retrieving are added to them); default 11"
        )


def threshold_grid(values: Sequence[float], points: int = 11) -> list[float]:
    """``points`` quantiles of the finite ``values`` (0 to 100 %), plus one below and one above all of them."""
    finite = np.array([v for v in values if np.isfinite(v)], dtype=float)
    if finite.size == 0:
        raise ValueError("no finite uncertainty to calibrate on: every first step was empty; check the prompts")
    if points < MIN_POINTS:
        raise ValueError(f"points={points}: a sweep needs at least {MIN_POINTS} thresholds")
    inner = np.quantile(finite, np.linspace(0.0, 1.0, points))
    margin = max(1.0, float(finite.max() - finite.min()) * 0.1)
    grid = [float(finite.min() - margin), *map(float, inner), float(finite.max() + margin)]
    return sorted(set(round(g, 6) for g in grid))


def calibrate_delta(
    backend: SelfAwareBackend,
    retriever: Any,
    questions: Sequence[Question],
    config: SeaKRConfig | None = None,
    *,
    objective: Objective = "f1",
    target_rate: float | None = None,
    points: int = 11,
    dataset: str = "",
    progress: bool = True,
    search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
    verdict: bool = True,
) -> DeltaProfile:
    """Choose delta for ``backend``'s model with ``config``'s other settings (not saved yet: ``save_profile``).

    Args:
        retriever: The search engine SeaKR will use (needed for the F1 objective).
        questions: Labelled calibration questions (not the ones you evaluate on).
        config: SeaKR's other settings (k, layer, source, estimator... are part of the profile's key); each of its
            rules that learns (``Rule.learn``: ``TokenCascade``'s band, ``StateProbe``'s probe) learns its state from
            this calibration, stored with delta under the rule's name (``DeltaProfile.rules``).
        objective: ``"f1"`` (the sweep's best mean F1; ties: the higher, fewer retrievals) or ``"rate"``.
        target_rate: Fraction of first steps that should retrieve, in [0, 1]: what delta is set for with objective
            ``"rate"``; with ``"f1"``, only what the verdict compares the realised rate with and what a rule learns at
            that rate (the state probe's threshold).
        points: Quantile thresholds in the sweep, at least ``MIN_POINTS`` (two more are added: always and never).
        dataset: Name of the question file, recorded in the profile.
        search_timeout: Seconds one search may take (the F1 objective searches), ``None``: no limit.
        verdict: Also judge the gate's signals (``evaluation.verdict``: AUROC for "retrieval helps", the rate on
            questions delta was not set on, the harm rate), labelled by closed-book and single-retrieval answers to
            the same questions (about three LM calls and one search more per question).

    Every setting is checked before the first call (:func:`check_settings`, and each rule's learning on the
    questions and back-end: ``calibration_evidence.check_learning``).

    Raises:
        ValueError: A setting that could not work, before any call.
        CalibrationIncomplete: A stage after the sweep failed; its ``partial`` holds the sweep and the chosen delta.
    """
    if not questions:
        raise ValueError("no calibration questions: give a labelled question file with at least one question")
    check_settings(objective=objective, target_rate=target_rate, points=points)
    base = (config or SeaKRConfig()).with_(retrieve="uncertain")
    cached = CachedBackend(backend)
    evidence = CalibrationEvidence(cached, retriever, base, questions, target_rate=target_rate, dataset=dataset,
                                   search_timeout=search_timeout)  # fmt: skip
    check_learning(base.rules, evidence)
    texts = [q.question for q in questions]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedDeltaWarning)  # that is what this function is fixing
        # every first step measured: no rule decides before the samples
        measure = base.with_(rules=())
        assessed = SeaKR(cached, retriever, measure, search_timeout=search_timeout).assess_many(texts)
        first = [a.uncertainty.value for a in assessed]
        grid = threshold_grid(first, points)
        sweep = [{"delta": d, "first_step_retrieval_rate": _rate(first, d)} for d in grid]
        if objective == "rate":
            if target_rate == 1.0:
                delta = grid[0]
            elif target_rate == 0.0:
                delta = grid[-1]
            else:
                delta = float(np.quantile([v for v in first if np.isfinite(v)], 1.0 - target_rate))
            sweep.append({"delta": delta, "first_step_retrieval_rate": _rate(first, delta), "chosen": True})
        else:
            from tqdm.auto import tqdm

            total = len(grid) * len(texts)
            with tqdm(total=total, desc="calibrating delta", unit="answer", disable=not progress) as bar:
                for row in sweep:
                    results = SeaKR(
                        cached, retriever, base.with_(delta=row["delta"]), search_timeout=search_timeout
                    ).answer_many(texts)
                    scores = [score(r.answer, q.answers) for r, q in zip(results, questions, strict=True)]
                    row["f1"] = float(np.mean([s.f1 for s in scores]))
                    row["em"] = float(np.mean([s.em for s in scores]))
                    row["retrievals_per_question"] = float(np.mean([r.searches for r in results]))
                    bar.update(len(texts))
                    bar.set_postfix(delta=f"{row['delta']:.3f}", F1=f"{row['f1']:.3f}", refresh=False)
            best = max(sweep, key=lambda r: (r["f1"], r["delta"]))
            best["chosen"] = True
            delta = best["delta"]
        partial = DeltaProfile(
            model=canonical_model_name(backend.model_name),
            layer=backend.profile_layer(base.layer),
            source=base.source,
            estimator=base.estimator,
            k=base.k,
            delta=float(delta),
            objective=objective,
            target_rate=target_rate,
            dataset=dataset,
            questions=len(questions),
            sweep=sweep,
            prompt=prompt_settings(base),
            dtype=getattr(backend, "dtype", None),
        )
        evidence.record([a.output for a in assessed], first, float(delta))
        stage = "judging the gate (closed-book and single-retrieval answers)"
        try:
            verdicts = {}
            if verdict and len(questions) >= MIN_QUESTIONS:  # fewer: too few to judge anything, no verdict
                verdicts = gate_verdicts(base, assessed, *evidence.labels(), target_rate)
            learned = {}
            for rule in base.rules:
                stage = f"learning the {rule.name} rule's state"
                state = rule.learn(evidence)
                if state is not None:
                    learned[rule.name] = state
        except Exception as err:  # the sweep's LM calls are spent: hand back what they chose
            raise CalibrationIncomplete(
                f"the sweep chose delta = {delta:.4f}, then {stage} failed: {type(err).__name__}: {err}", partial
            ) from err
    return replace(partial, rules=learned, verdict=verdicts)


def _rate(values: Sequence[float], delta: float) -> float:
    """Fraction of first steps the gate sends to retrieval at ``delta`` (an empty step, inf, always does)."""
    return float(np.mean([not (v <= delta) for v in values]))
