"""Fitting a linear probe (``uncertainty.linear_probe``): L2-penalised logistic regression in numpy, the layer and
the penalty chosen by cross-validation inside the training questions (judged by ``evaluation.auroc``).

``seakr calibrate`` with the ``state-probe`` rule and the project's own analysis (``experiments/probe_cv.py``) both fit
with this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seakr_integrations.evaluation.auroc import auroc
from seakr_integrations.uncertainty.linear_probe import LinearProbe

__all__ = ["PENALTIES", "Choice", "choose_and_fit", "cross_validated", "fit_logistic"]

PENALTIES = (0.1, 1.0, 10.0, 100.0)
"""The L2 strengths tried (on standardised vectors, the penalty of the mean log-loss times the question count)."""


def fit_logistic(x: np.ndarray, y: np.ndarray, penalty: float, iterations: int = 50) -> tuple[np.ndarray, float]:
    """Weights and bias minimising the log-loss plus ``penalty / 2 * |w|^2`` (Newton's method; the bias is not
    penalised).  A hidden state is wider than the calibration set is long (896 against a few hundred questions), so
    with ``penalty > 0`` and more dimensions than rows each Newton step is solved through the rows' n x n system
    (Woodbury, the bias by its Schur complement): the same steps, about ten times faster than the d x d solve."""
    n, d = x.shape
    w, b = np.zeros(d), 0.0
    dual = penalty > 0 and d > n
    gram = x @ x.T if dual else None
    a = None if dual else np.hstack([x, np.ones((n, 1))])
    ridge = None if dual else np.diag(np.append(np.full(d, float(penalty)), 0.0) + 1e-9)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        weight = p * (1 - p)
        grad_w, grad_b = x.T @ (p - y) + penalty * w, float(np.sum(p - y))
        if dual:
            step_w, step_b = _newton_step_by_rows(x, gram, weight, penalty, grad_w, grad_b)
        else:
            hess = (a * weight[:, None]).T @ a + ridge
            step = np.linalg.solve(hess, np.append(grad_w, grad_b))
            step_w, step_b = step[:-1], float(step[-1])
        w, b = w - step_w, b - step_b
        if max(float(np.max(np.abs(step_w))), abs(step_b)) < 1e-8:
            break
    return w, float(b)


def _newton_step_by_rows(
    x: np.ndarray, gram: np.ndarray, weight: np.ndarray, penalty: float, grad_w: np.ndarray, grad_b: float
) -> tuple[np.ndarray, float]:
    """Solve ``[[X'WX + cI, X'W1], [1'WX, 1'W1]] [s; t] = [g; h]`` with one n x n solve: ``(X'WX + cI)^-1`` by
    Woodbury, ``(1/c)(v - X' R (cI + R K R)^-1 R X v)`` with ``R = W^1/2`` and ``K = XX'``, then the bias."""
    root = np.sqrt(weight)
    inner = np.linalg.inv(penalty * np.eye(len(weight)) + root[:, None] * gram * root[None, :])

    def solve(v: np.ndarray) -> np.ndarray:
        return (v - x.T @ (root * (inner @ (root * (x @ v))))) / penalty

    cross = x.T @ weight
    solved_grad, solved_cross = solve(grad_w), solve(cross)
    step_b = (grad_b - cross @ solved_grad) / (float(weight.sum()) + 1e-9 - cross @ solved_cross)
    return solved_grad - solved_cross * step_b, float(step_b)


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    return mean, np.where(scale > 1e-8, scale, 1.0)


def _fit(x: np.ndarray, y: np.ndarray, penalty: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    mean, scale = _standardise(x)
    w, b = fit_logistic((x - mean) / scale, y.astype(float), penalty)
    return mean, scale, w, b


def _score(fitted: tuple[np.ndarray, np.ndarray, np.ndarray, float], x: np.ndarray) -> np.ndarray:
    mean, scale, w, b = fitted
    return ((x - mean) / scale) @ w + b


@dataclass(frozen=True)
class Choice:
    """The layer, source and penalty chosen, with the inner cross-validated AUROC that chose them."""

    layer: int
    source: str
    penalty: float
    inner_auroc: float


def choose_and_fit(
    vectors: dict[str, np.ndarray],
    labels: Sequence[bool],
    groups: Sequence[int],
    *,
    layers: Sequence[int],
    label: str,
    trained_on: dict,
    penalties: Sequence[float] = PENALTIES,
) -> tuple[LinearProbe, Choice]:
    """Choose the source, layer and penalty by cross-validation over ``groups`` (each group held out in turn, AUROC
    of the held-out scores pooled), then fit the chosen one on every question.

    Args:
        vectors: ``source -> (questions, layers, width)`` hidden states.
        labels: One per question: whether the label holds.
        groups: One per question: its inner fold.

    Raises:
        ValueError: Fewer than two groups, or a label with one class only.
    """
    y = np.asarray(labels, dtype=bool)
    g = np.asarray(groups)
    if len(set(g.tolist())) < 2:
        raise ValueError("choosing a probe needs at least two groups of questions")
    if y.all() or not y.any():
        raise ValueError(f"every question has the same '{label}' label: the probe has nothing to learn")
    best: Choice | None = None
    for source, data in vectors.items():
        for layer in layers:
            x = data[:, layer].astype(np.float64)
            for penalty in penalties:
                held = np.zeros(len(y))
                for group in sorted(set(g.tolist())):
                    train, test = g != group, g == group
                    if y[train].all() or not y[train].any():
                        held[test] = 0.0
                        continue
                    held[test] = _score(_fit(x[train], y[train], penalty), x[test])
                score = auroc(held, y)
                if best is None or score > best.inner_auroc:
                    best = Choice(layer, source, penalty, score)
    assert best is not None
    mean, scale, w, b = _fit(vectors[best.source][:, best.layer].astype(np.float64), y, best.penalty)
    probe = LinearProbe(
        layer=best.layer,
        source=best.source,
        label=label,
        mean=tuple(mean.tolist()),
        scale=tuple(scale.tolist()),
        weights=tuple(w.tolist()),
        bias=b,
        penalty=best.penalty,
        trained_on=trained_on,
    )
    return probe, best


def cross_validated(
    vectors: dict[str, np.ndarray], labels: Sequence[bool], groups: Sequence[int], *, layers: Sequence[int]
) -> tuple[np.ndarray, list[Choice]]:
    """Each question's probe probability from a probe chosen and fitted without its group (the choice nested in the
    other groups): scores no question was trained on, for an honest AUROC.  Returns them and each group's choice."""
    y = np.asarray(labels, dtype=bool)
    g = np.asarray(groups)
    scores = np.zeros(len(y))
    choices = []
    for group in sorted(set(g.tolist())):
        train, test = g != group, g == group
        probe, choice = choose_and_fit(
            {s: v[train] for s, v in vectors.items()}, y[train], g[train], layers=layers, label="", trained_on={}
        )
        scores[test] = probe.probabilities(vectors[choice.source][test, choice.layer].astype(np.float64))
        choices.append(choice)
    return scores, choices
