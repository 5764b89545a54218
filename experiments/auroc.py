"""How well does an uncertainty score predict a wrong answer?  AUROC, with ties and infinities handled.

Computed from ranks (the Mann-Whitney U statistic), so tied scores count half and an infinite score (an empty
generation) simply ranks highest; no curve is integrated.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def auroc(scores: Sequence[float], wrong: Sequence[bool]) -> float:
    """AUROC of ``scores`` (higher = more uncertain) for predicting ``wrong``.

    Raises:
        ValueError: Lengths differ, a score is NaN, or all answers are right (or all wrong): AUROC needs both.
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(wrong, dtype=bool)
    if s.shape != y.shape:
        raise ValueError(f"{s.size} scores for {y.size} labels; give one score per answer")
    if np.isnan(s).any():
        raise ValueError("a score is NaN; drop that answer or give it inf (maximally uncertain)")
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        raise ValueError(f"AUROC needs both right and wrong answers; got {negatives} right and {positives} wrong")
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
