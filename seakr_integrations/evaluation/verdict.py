"""Does the gate know anything for this model and prompt?  The verdict ``seakr calibrate`` stores in a profile.

SeaKR's premise is that the model's state says when to search.  Whether it does is measured, per model and prompt,
on the calibration questions themselves, with labels from two cheap baselines on the same questions: **retrieval
helps** (single retrieval's F1 above the closed-book chain of thought's) and **retrieval harms** (closed-book right,
single retrieval wrong).  The gate's signal is judged by its AUROC for "retrieval helps" with a bootstrap interval;
its threshold by the retrieval rate it gives on questions it was not set on (each half of the questions sets delta
for the other).  An interval that holds 0.5 means the signal carries no information here, and the profile says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from seakr_integrations.evaluation.auroc import auroc_interval

__all__ = ["MIN_QUESTIONS", "RIGHT_F1", "GateVerdict", "gate_verdict"]

MIN_QUESTIONS = 10
"""Fewer calibration questions than this get no verdict (``seakr calibrate`` says so)."""

RIGHT_F1 = 0.5
"""An answer counts as right (for "retrieval harms") at this F1 or above."""


@dataclass(frozen=True)
class GateVerdict:
    """What the gate's signal knows on the calibration questions.

    Attributes:
        signal: The signal judged (an estimator's name).
        questions: Questions with both baselines' answers.
        helps: Questions where retrieval helped.
        auroc, auroc_low, auroc_high: AUROC for "retrieval helps" (higher signal = more uncertain) and its 95%
            bootstrap interval; ``None`` when every question has the same label (nothing to rank).
        informative: Whether the interval lies above 0.5.
        target_rate: The first-step retrieval rate delta was set for.
        realized_rate: The rate on questions delta was not set on (each half sets it for the other).
        harm_rate: Share of questions where retrieval turned a right closed-book answer wrong.
    """

    signal: str
    questions: int
    helps: int
    auroc: float | None
    auroc_low: float | None
    auroc_high: float | None
    informative: bool
    target_rate: float | None
    realized_rate: float | None
    harm_rate: float

    def to_dict(self) -> dict[str, Any]:
        """Strict JSON: an undefined number is ``None``."""
        return {k: None if isinstance(v, float) and not np.isfinite(v) else v for k, v in asdict(self).items()}

    def summary(self) -> str:
        """One line for the CLI and the warning."""
        rate = (
            ""
            if self.realized_rate is None
            else f"; first steps retrieving on questions delta was not set on: {self.realized_rate:.2f} against the "
            f"target {self.target_rate:.2f}"
        )
        if self.auroc is None or not np.isfinite(self.auroc):
            return (
                f"the gate's {self.signal} could not be judged: retrieval helped on {self.helps} of {self.questions} "
                f"questions, so there is nothing to rank{rate}; retrieval turned a right closed-book answer wrong on "
                f"{100 * self.harm_rate:.1f}% of them"
            )
        knows = "carries information" if self.informative else "carries no information (its interval holds 0.5)"
        return (
            f"the gate's {self.signal} {knows}: AUROC for 'retrieval helps' {self.auroc:.2f} (95% "
            f"{self.auroc_low:.2f}-{self.auroc_high:.2f}, {self.questions} questions, {self.helps} helped){rate}; "
            f"retrieval turned a right closed-book answer wrong on {100 * self.harm_rate:.1f}% of them"
        )


def _rate_threshold(values: np.ndarray, target: float) -> float:
    finite = values[np.isfinite(values)]
    return float(np.quantile(finite, 1.0 - target)) if len(finite) else float("inf")


def gate_verdict(
    signal: str,
    first_step: Sequence[float],
    closed_book_f1: Sequence[float],
    single_retrieval_f1: Sequence[float],
    *,
    target_rate: float | None = None,
) -> GateVerdict:
    """The verdict on ``signal``'s first-step readings (one per question, higher = more uncertain; ``inf`` for an
    empty step) against the two baselines' F1 on the same questions.

    Raises:
        ValueError: The sequences differ in length, or fewer than 4 questions.
    """
    u = np.asarray(first_step, dtype=float)
    cot = np.asarray(closed_book_f1, dtype=float)
    single = np.asarray(single_retrieval_f1, dtype=float)
    if not len(u) == len(cot) == len(single):
        raise ValueError(f"one reading and two answers per question, got {len(u)}, {len(cot)} and {len(single)}")
    if len(u) < 4:
        raise ValueError(f"{len(u)} questions: a verdict needs at least 4")
    helps = single > cot
    top = u[np.isfinite(u)].max() + 1.0 if np.isfinite(u).any() else 0.0
    finite = np.where(np.isfinite(u), u, top)  # an empty step (inf) ranks as the most uncertain
    point, low, high = auroc_interval(finite, helps)
    realized = None
    if target_rate is not None:
        halves = np.arange(len(u)) % 2 == 0
        rates = []
        for setting in (halves, ~halves):
            delta = _rate_threshold(u[setting], target_rate)
            rates.append(np.mean(~(u[~setting] <= delta)))
        realized = float(np.mean(rates))
    harm = float(np.mean((cot >= RIGHT_F1) & (single < RIGHT_F1)))
    return GateVerdict(
        signal=signal,
        questions=len(u),
        helps=int(helps.sum()),
        auroc=point,
        auroc_low=low,
        auroc_high=high,
        informative=bool(np.isfinite(low) and low > 0.5),
        target_rate=target_rate,
        realized_rate=realized,
        harm_rate=harm,
    )
