"""SKR-kNN (Wang et al., 2023, "Self-Knowledge Guided Retrieval"): retrieve when similar questions needed it.

Training questions are labelled by the model's own ``seakr eval`` results with and without retrieval (the paper's
Eq. 4); a new question follows the vote of its k nearest labelled ones (the rule: docs/design/core.md).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from seakr_integrations.evaluation.interface import Method, MethodAnswer
from seakr_integrations.evaluation.training import WITH, WITHOUT, training_records


@dataclass(frozen=True)
class SKRLabels:
    """Labelled training questions: ``known[i]`` when the model did as well without retrieval (D+).

    Attributes:
        questions: The kept training questions.
        known: D+ (True) or D- (False), per question.
        discarded: Training questions both methods got wrong (left out, as in the paper).
        source: Where the results came from.
    """

    questions: list[str]
    known: list[bool]
    discarded: int
    source: str

    def describe(self) -> dict[str, Any]:
        m = sum(self.known)
        return {"source": self.source, "known": m, "unknown": len(self.known) - m, "discarded": self.discarded}


def skr_labels(train_dir: str | os.PathLike[str]) -> SKRLabels:
    """Labels from ``cot.jsonl`` and ``single-retrieval.jsonl`` results of the same training questions.

    Raises:
        FileNotFoundError: A results file is missing (the message gives the command that makes it).
        ValueError: The two files share no question.
    """
    root = Path(train_dir)
    without, with_, shared = training_records(root, "SKR-kNN")
    records = {WITHOUT: without, WITH: with_}
    kept = [i for i in shared if records[WITHOUT][i]["em"] > 0 or records[WITH][i]["em"] > 0]
    if not kept:
        raise ValueError(
            f"{root}: both methods got every one of the {len(shared)} training questions wrong, so there is nothing "
            "to learn from; use more (or easier) training questions"
        )
    return SKRLabels(
        [records[WITHOUT][i]["question"] for i in kept],
        [records[WITHOUT][i]["em"] >= records[WITH][i]["em"] for i in kept],
        len(shared) - len(kept),
        str(root),
    )


class SKRkNN:
    """Answer without retrieval when the ``k`` nearest labelled questions say the model knows, else with it.

    Args:
        without_retrieval: The method for questions the model is expected to know (CoT).
        with_retrieval: The method for the others (single retrieval).
        embed: Texts -> embeddings (rows; normalised here for cosine similarity).
        k: Neighbours that vote (the paper used 3 to 10 by dataset size).
    """

    name = "skr-knn"

    def __init__(
        self,
        without_retrieval: Method,
        with_retrieval: Method,
        labels: SKRLabels,
        embed: Callable[[Sequence[str]], np.ndarray],
        k: int = 10,
    ) -> None:
        if k < 1:
            raise ValueError(f"k={k}: at least one neighbour must vote")
        self.without_retrieval, self.with_retrieval = without_retrieval, with_retrieval
        self.labels, self.embed, self.k = labels, embed, k
        if k >= len(labels.questions):
            warnings.warn(
                f"SKR-kNN: k={k} neighbours but only {len(labels.questions)} labelled training questions "
                f"({labels.discarded} discarded: both methods wrong), so every question's vote is the whole training "
                "set and every question is answered the same way; label more training questions or lower --skr-k",
                stacklevel=2,
            )
        self._train = _unit(embed(labels.questions))
        self._known = np.asarray(labels.known, dtype=bool)

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "k": self.k,
            "labels": self.labels.describe(),
            "without_retrieval": self.without_retrieval.describe(),
            "with_retrieval": self.with_retrieval.describe(),
        }

    def decide(self, questions: Sequence[str]) -> list[tuple[bool, int]]:
        """For each question: retrieve or not, and how many of its neighbours were known (l)."""
        sims = _unit(self.embed(list(questions))) @ self._train.T
        k = min(self.k, self._train.shape[0])
        nearest = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        m = int(self._known.sum())
        n = len(self._known) - m
        known_votes = self._known[nearest].sum(axis=1)
        # known when l / (k - l) >= m / n, written without division (k - l or n may be 0).  With no known training
        # question (m = 0) the rule reads 0 >= 0 and would never retrieve; every label says retrieve, so retrieve.
        return [(not (m > 0 and int(v) * n >= (k - int(v)) * m), int(v)) for v in known_votes]

    def answer_many(self, questions: Sequence[str]) -> list[MethodAnswer]:
        decisions = self.decide(questions)
        out: list[MethodAnswer | None] = [None] * len(questions)
        for retrieve, method in ((False, self.without_retrieval), (True, self.with_retrieval)):
            picked = [i for i, (r, _) in enumerate(decisions) if r is retrieve]
            if picked:
                for i, answer in zip(picked, method.answer_many([questions[i] for i in picked]), strict=True):
                    trace = {"skr": {"retrieve": retrieve, "known_neighbours": decisions[i][1]}, **answer.trace}
                    out[i] = replace(answer, trace=trace)
        return out  # type: ignore[return-value]


def _unit(vectors: Any) -> np.ndarray:
    rows = np.asarray(vectors, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
