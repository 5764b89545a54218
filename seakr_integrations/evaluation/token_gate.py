"""The token gate's threshold, fitted on training questions: the single-pass gate the field measures adaptive
retrieval against (Moskvoretskii et al., ACL 2025, arXiv 2501.12835: single-pass token-probability estimates
matched multi-call pipelines such as SeaKR on multi-hop questions at under two LM calls a question).

It learns from the files SKR-kNN learns from: the ``cot`` and ``single-retrieval`` results of the same training
questions, the CoT ones holding each chain's greedy reading (``baselines.GREEDY_READING``).  The threshold is the
one whose routing (keep the CoT answer at or below it, else single retrieval's) scores the best mean F1 on them;
among equals, the highest (fewest retrievals).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seakr_integrations.evaluation.training import WITH, WITHOUT, training_records
from seakr_integrations.reasoning.baselines import GREEDY_READING
from seakr_integrations.reasoning.jsonform import number_from_json


@dataclass(frozen=True)
class TokenGateFit:
    """The fitted gate.

    Attributes:
        threshold: Retrieve when the closed-book chain's greedy reading is above it.
        estimator: The reading (``GREEDY_READING``).
        questions: Training questions fitted on.
        retrieval_rate: The share of them the threshold sends to retrieval.
        f1: Their mean F1 routed by it, and without and with retrieval for every question.
        source: The training results directory.
    """

    threshold: float
    estimator: str
    questions: int
    retrieval_rate: float
    f1: dict[str, float]
    source: str

    def describe(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fit_token_gate(train_dir: str | os.PathLike[str]) -> TokenGateFit:
    """The threshold from ``cot.jsonl`` and ``single-retrieval.jsonl`` results of the same training questions.

    Raises:
        FileNotFoundError: A results file is missing (the message gives the command that makes it).
        ValueError: The files share no question, or the CoT records hold no greedy reading.
    """
    root = Path(train_dir)
    without, with_, shared = training_records(root, "the token gate")
    rows = {WITHOUT: without, WITH: with_}
    points = []
    for i in shared:
        reading = _reading(rows[WITHOUT][i])
        if reading is None:
            raise ValueError(
                f"{root / (WITHOUT + '.jsonl')}: question {i} has no greedy reading of its chain ({GREEDY_READING}); "
                f"its records come from an older seakr: run `seakr eval --method {WITHOUT}` on the training questions "
                "again"
            )
        points.append((reading, float(rows[WITHOUT][i]["f1"]), float(rows[WITH][i]["f1"])))
    best = (-math.inf, -math.inf)
    finite = [p[0] for p in points if math.isfinite(p[0])]
    threshold = min(finite, default=0.0) - 1.0  # below every reading: retrieve for every question
    for candidate in sorted(set(finite) | {threshold}):
        routed = sum(without if reading <= candidate else with_ for reading, without, with_ in points) / len(points)
        if (routed, candidate) >= best:
            best, threshold = (routed, candidate), candidate
    n = len(points)
    return TokenGateFit(
        threshold,
        GREEDY_READING,
        n,
        sum(reading > threshold for reading, _, _ in points) / n,
        {
            "routed": best[0],
            "without_retrieval": sum(p[1] for p in points) / n,
            "with_retrieval": sum(p[2] for p in points) / n,
        },
        str(root),
    )


def _reading(record: dict[str, Any]) -> float | None:
    """The greedy reading a CoT record's step holds (``inf`` for an empty chain: the gate retrieves), or ``None``
    when it holds none."""
    steps = (record.get("trace") or {}).get("steps") or []
    screen = steps[0].get("screen") if steps else None
    if not isinstance(screen, dict) or screen.get("estimator") != GREEDY_READING:
        return None
    try:
        value = number_from_json(screen.get("value"))
    except ValueError:
        return None
    return None if math.isnan(value) else value
