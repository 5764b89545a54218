"""Choosing delta on labelled questions: maximise F1 over a sweep, or hit a target retrieval rate.

The sweep's thresholds come from the model itself: the closed-book first-step uncertainties of the calibration
questions, at evenly spaced quantiles, plus one below all of them (always retrieve) and one above (never).  SeaKR
then answers every question at every threshold; a :class:`CachedBackend` serves the calls the runs share (every
run's first step, and most of the path at nearby thresholds), so a sweep costs a few full runs, not one per
threshold.  Never calibrate on the questions you report results on.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.cached import CachedBackend
from seakr_integrations.calibration import (
    DeltaProfile,
    UncalibratedDeltaWarning,
    canonical_model_name,
    prompt_settings,
)
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.reasoner import SeaKR

__all__ = ["calibrate_delta", "threshold_grid"]

Objective = Literal["f1", "rate"]


def threshold_grid(values: Sequence[float], points: int = 11) -> list[float]:
    """``points`` quantiles of the finite ``values`` (0 to 100 %), plus one below and one above all of them."""
    finite = np.array([v for v in values if np.isfinite(v)], dtype=float)
    if finite.size == 0:
        raise ValueError("no finite uncertainty to calibrate on: every first step was empty; check the prompts")
    if points < 2:
        raise ValueError(f"points={points}: a sweep needs at least 2 thresholds")
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
) -> DeltaProfile:
    """Choose delta for ``backend``'s model with ``config``'s other settings.

    Args:
        backend: The model to calibrate.
        retriever: The search engine SeaKR will use (needed for the F1 objective).
        questions: Labelled calibration questions (not the ones you evaluate on).
        config: SeaKR's other settings (k, layer, source, estimator... are part of the profile's key).
        objective: ``"f1"``: the threshold of the sweep with the best mean F1 (ties: the higher threshold, fewer
            retrievals).  ``"rate"``: the threshold at which ``target_rate`` of the first steps retrieve.
        target_rate: Fraction of first steps that should retrieve, in [0, 1] (objective ``"rate"``).
        points: Quantile thresholds in the sweep (two more are added: always and never).
        dataset: Name of the question file, recorded in the profile.
        progress: Show a progress bar over the sweep.

    Returns:
        The profile (not saved yet: see ``save_profile``).
    """
    if not questions:
        raise ValueError("no calibration questions: give a labelled question file with at least one question")
    if objective == "rate":
        if target_rate is None or not 0.0 <= target_rate <= 1.0:
            raise ValueError(f"target_rate={target_rate!r}: give the fraction of steps that should retrieve, in [0, 1]")
    elif objective != "f1":
        raise ValueError(f"objective={objective!r}: choose 'f1' (maximise F1) or 'rate' (reach a retrieval rate)")
    base = (config or SeaKRConfig()).with_(retrieve="uncertain")
    cached = CachedBackend(backend)
    texts = [q.question for q in questions]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedDeltaWarning)  # that is what this function is fixing
        first = [a.uncertainty.value for a in SeaKR(cached, retriever, base).assess_many(texts)]
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
            bar = None
            if progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(grid) * len(texts), desc="calibrating delta", unit="answer")
            for row in sweep:
                results = SeaKR(cached, retriever, base.with_(delta=row["delta"])).answer_many(texts)
                scores = [score(r.answer, q.answers) for r, q in zip(results, questions, strict=True)]
                row["f1"] = float(np.mean([s.f1 for s in scores]))
                row["em"] = float(np.mean([s.em for s in scores]))
                row["retrievals_per_question"] = float(np.mean([r.searches for r in results]))
                if bar is not None:
                    bar.update(len(texts))
                    bar.set_postfix(delta=f"{row['delta']:.3f}", F1=f"{row['f1']:.3f}", refresh=False)
            if bar is not None:
                bar.close()
            best = max(sweep, key=lambda r: (r["f1"], r["delta"]))
            best["chosen"] = True
            delta = best["delta"]
    return DeltaProfile(
        model=canonical_model_name(backend.model_name),
        layer=backend.resolve_layer(base.layer),
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
    )


def _rate(values: Sequence[float], delta: float) -> float:
    """Fraction of first steps the gate sends to retrieval at ``delta`` (an empty step, inf, always does)."""
    return float(np.mean([not (v <= delta) for v in values]))
