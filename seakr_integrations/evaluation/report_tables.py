"""The report's method tables: F1 with a bootstrap interval, costs per question, and paired differences.

Shared by the main report and its confirmation section, so that both print the same columns computed the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from seakr_integrations.evaluation.method_runs import MethodRun

__all__ = ["bootstrap_interval", "method_table", "paired_lines", "shared_questions_note"]


def shared_questions_note(group: Sequence[MethodRun], count: int) -> list[str]:
    """What the tables of ``group`` (cut by ``on_shared_questions`` to ``count`` questions) leave out, if anything."""
    more = [f"{run.name} ({len(run.records)})" for run in group if len(run.records) > count]
    if more and count:
        return [
            f"Methods compared on the {count} questions every results file holds; {', '.join(more)} answered more, "
            "left out here (closed-book's extra answers count in its AUROC).",
            "",
        ]
    if more:
        return ["These results files share no question: each row is over its own questions.", ""]
    return []


def method_table(runs: Sequence[MethodRun]) -> list[str]:
    """One row per run, best F1 first: questions, EM, F1 with its bootstrap interval, and the costs per question."""
    lines = [
        "| method | questions | EM | F1 | F1 95% CI | retrievals / q | LM calls / q | tokens / q | s / q |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for run in sorted(runs, key=lambda r: -r.summary().f1):
        s = run.summary()
        lo, hi = bootstrap_interval([r["f1"] for r in run.records])
        lines.append(
            f"| {run.name} | {s.questions} | {100 * s.em:.1f} | {100 * s.f1:.1f} | {100 * lo:.1f}-{100 * hi:.1f} "
            f"| {s.retrievals:.2f} | {s.lm_calls:.1f} | {s.generated_tokens:.0f} | {s.seconds:.1f} |"
        )
    lines.append("")
    return lines


def bootstrap_interval(values: Sequence[float], *, samples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the mean of ``values`` (seeded: the same report every time)."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(samples, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def paired_lines(seakr: MethodRun, others: Sequence[MethodRun]) -> list[str]:
    """SeaKR against each method question by question: the mean F1 difference with a paired bootstrap interval.

    Intervals per method overlap even when one method is ahead on nearly every question; resampling the questions
    with both answers attached is what says whether a gap outlasts the choice of questions.
    """
    mine = {str(r["id"]): r["f1"] for r in seakr.records}
    rows = []
    for other in sorted(others, key=lambda r: r.name):
        theirs = {str(r["id"]): r["f1"] for r in other.records}
        ids = [i for i in mine if i in theirs]
        if other is seakr or not ids:
            continue
        diffs = [mine[i] - theirs[i] for i in ids]
        lo, hi = bootstrap_interval(diffs)
        better, worse = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
        rows.append(
            f"| {other.name} | {len(ids)} | {100 * sum(diffs) / len(ids):+.1f} | {100 * lo:+.1f} to {100 * hi:+.1f} "
            f"| {better} | {worse} | {len(ids) - better - worse} |"
        )
    if not rows:
        return []
    return [
        "SeaKR against each method on the same questions: mean F1 difference (SeaKR minus the method) with a paired "
        "95% bootstrap interval (questions resampled with both answers), and the questions where SeaKR's F1 is "
        "higher, lower or equal. An interval wholly above 0 means SeaKR's lead outlasts the choice of questions.",
        "",
        "| method | questions | F1 difference | 95% CI | SeaKR higher | lower | equal |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: |",
        *rows,
        "",
    ]
