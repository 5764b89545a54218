"""How well does a score rank one class above the other?  AUROC from ranks, and its bootstrap interval.

Computed from ranks (the Mann-Whitney U statistic), so tied scores count half and an infinite score (an empty
generation) simply ranks highest; no curve is integrated.  The interval resamples questions with replacement and
keeps the resamples that hold both classes, as every AUROC table of the project reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["BOOTSTRAP_DRAWS", "auroc", "auroc_interval", "bootstrap"]

BOOTSTRAP_DRAWS = 2000
"""Resamples of the questions behind every 95% interval."""


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The probability that a positive scores above a negative (ties count half); NaN when one class is missing
    (AUROC needs both).

    Raises:
        ValueError: Lengths differ, or a score is NaN (give an empty generation ``inf``: maximally uncertain).
    """
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    if s.shape != y.shape:
        raise ValueError(f"{s.size} scores for {y.size} labels; give one score per label")
    if np.isnan(s).any():
        raise ValueError("a score is NaN; drop that answer or give it inf (maximally uncertain)")
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=float)
    sorted_scores = s[order]
    i = 0
    while i < len(s):  # average ranks over ties (1-based)
        j = i
        while j + 1 < len(s) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u = ranks[y].sum() - positives * (positives + 1) / 2
    return float(u / (positives * negatives))


def bootstrap(
    statistic: Callable[[np.ndarray], float], labels: Sequence[bool], draws: int = BOOTSTRAP_DRAWS
) -> tuple[float, float, float]:
    """``statistic(indices)`` on every question, and its 95% interval over resamples of the questions that keep both
    classes (NaN bounds when none does).  Pass a difference of two AUROCs for a paired interval: the same resampled
    questions score both."""
    y = np.asarray(labels, dtype=bool)
    rng = np.random.default_rng(0)
    values = []
    for _ in range(draws):
        i = rng.integers(0, len(y), len(y))
        if y[i].all() or not y[i].any():
            continue
        values.append(statistic(i))
    point = statistic(np.arange(len(y)))
    if not values:
        return point, float("nan"), float("nan")
    return point, float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


def auroc_interval(
    scores: Sequence[float], labels: Sequence[bool], draws: int = BOOTSTRAP_DRAWS
) -> tuple[float, float, float]:
    """AUROC and its 95% bootstrap interval: ``(point, low, high)``."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    return bootstrap(lambda i: auroc(s[i], y[i]), y, draws)
