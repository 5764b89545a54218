"""Results files summarised (``seakr report``): each run's scores and costs per question, and paired F1 differences
against one run, compared on the questions every run of a dataset answered (docs/design/core.md).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from seakr_integrations.evaluation.results import read_results
from seakr_integrations.evaluation.runner import EvalSummary, summarize

__all__ = [
    "PairedDifference",
    "Run",
    "bootstrap_interval",
    "method_table",
    "on_shared_questions",
    "paired_differences",
    "paired_rows",
    "read_runs",
    "results_paths",
    "summary_markdown",
]


@dataclass
class Run:
    """One results file: a method on a dataset, with its configuration and records."""

    path: Path
    config: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dataset(self) -> str:
        return os.path.splitext(str(self.config.get("dataset", "?")))[0]

    @property
    def method(self) -> str:
        return str(self.config.get("method", "?"))

    @property
    def stem(self) -> str:
        """The file's name without ``.jsonl`` (or ``.jsonl.gz``: a finished run kept gzipped)."""
        return self.path.name.removesuffix(".gz").removesuffix(".jsonl")

    @property
    def name(self) -> str:
        """The row's label: the method, and the file's name when it differs (one method run with other settings)."""
        return self.method if self.stem == self.method else f"{self.method} ({self.stem})"

    def summary(self) -> EvalSummary:
        return summarize(self.records)


def results_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The results files ``paths`` name: files as given, directories searched (recursively) for ``*.jsonl``; a
    ``ValueError`` when there is none."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():  # a run kept both plain and gzipped counts once
            plain = set(p.rglob("*.jsonl"))
            files += sorted([*plain, *(g for g in p.rglob("*.jsonl.gz") if g.with_suffix("") not in plain)])
        else:
            files.append(p)
    if not files:
        raise ValueError("no results files given: pass seakr eval outputs (files, or directories holding them)")
    return files


def read_runs(paths: Iterable[str | os.PathLike[str]]) -> list[Run]:
    """Read results files (see :func:`results_paths`); an empty one is an error naming it, not a silent gap."""
    runs = []
    for f in results_paths(paths):
        config, records = read_results(f)
        run = Run(f, config, list(records))
        if not run.records:
            raise ValueError(f"{f} holds no results yet: finish (or resume) its seakr eval run, or leave it out")
        runs.append(run)
    return runs


def on_shared_questions(group: Sequence[Run]) -> tuple[list[Run], int]:
    """The runs of one dataset cut to the questions all of them answered, and how many (0: none shared, runs whole)."""
    shared = set.intersection(*({str(r["id"]) for r in run.records} for run in group))
    if not shared:
        return list(group), 0
    return [replace(run, records=[r for r in run.records if str(r["id"]) in shared]) for run in group], len(shared)


def bootstrap_interval(values: Sequence[float], *, samples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the mean of ``values`` (seeded: the same table every time)."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(samples, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def method_table(runs: Sequence[Run]) -> list[str]:
    """Markdown, one row per run, best F1 first: questions, EM, F1 with its bootstrap interval, costs per question."""
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


@dataclass(frozen=True)
class PairedDifference:
    """One run's F1 against a reference run's on the questions both answered (differences: reference minus it)."""

    name: str
    questions: int
    mean: float
    low: float
    high: float
    higher: int
    lower: int
    equal: int


def paired_differences(reference: Run, others: Sequence[Run]) -> list[PairedDifference]:
    """``reference`` against each other run (by label) sharing a question with it, with a paired bootstrap interval."""
    mine = {str(r["id"]): r["f1"] for r in reference.records}
    out = []
    for other in sorted(others, key=lambda r: r.name):
        theirs = {str(r["id"]): r["f1"] for r in other.records}
        ids = [i for i in mine if i in theirs]
        if other is reference or not ids:
            continue
        diffs = [mine[i] - theirs[i] for i in ids]
        lo, hi = bootstrap_interval(diffs)
        higher, lower = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
        equal = len(ids) - higher - lower
        out.append(PairedDifference(other.name, len(ids), sum(diffs) / len(ids), lo, hi, higher, lower, equal))
    return out


def _named(group: Sequence[Run], name: str) -> Run | None:
    """The run of ``group`` whose label or file name is ``name``; an error when two are."""
    found = [run for run in group if name in (run.name, run.stem)]
    if len(found) > 1:
        files = ", ".join(str(run.path) for run in found)
        raise ValueError(f"--against {name}: {len(found)} runs of {group[0].dataset} match ({files}); name one file")
    return found[0] if found else None


def paired_rows(reference: Run, others: Sequence[Run]) -> list[str]:
    """:func:`paired_differences` as Markdown table rows: run, questions, mean F1 difference and its 95 % interval
    (in points), and the questions where the reference is higher, lower or equal."""
    return [
        f"| {d.name} | {d.questions} | {100 * d.mean:+.1f} | {100 * d.low:+.1f} to {100 * d.high:+.1f} "
        f"| {d.higher} | {d.lower} | {d.equal} |"
        for d in paired_differences(reference, others)
    ]


def _paired_lines(reference: Run, others: Sequence[Run]) -> list[str]:
    rows = paired_rows(reference, others)
    if not rows:
        return []
    return [
        f"{reference.name} against each run on the same questions: mean F1 difference ({reference.name} minus the "
        "run) with a paired 95% bootstrap interval (questions resampled with both answers), and the questions where "
        f"{reference.name}'s F1 is higher, lower or equal.",
        "",
        "| run | questions | F1 difference | 95% CI | higher | lower | equal |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: |",
        *rows,
        "",
    ]


def summary_markdown(runs: Sequence[Run], *, against: str | None = None, title: str = "Evaluation results") -> str:
    """The summary as Markdown: per dataset, the method table on shared questions and, with ``against`` (a row's
    label or a file name), that run's paired F1 differences with every other run.

    Raises:
        ValueError: ``against`` names no run of any dataset, or two runs of one dataset.
    """
    groups: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        groups[run.dataset].append(run)
    if against is not None and not any(_named(group, against) for group in groups.values()):
        labels = sorted({run.name for run in runs})
        raise ValueError(f"--against {against}: no such run; the runs are {', '.join(labels)}")
    lines = [f"# {title}", ""]
    for dataset, group in sorted(groups.items()):
        same, count = on_shared_questions(group)
        lines += [f"## {dataset}", ""]
        if any(len(run.records) > count for run in group):
            lines += [
                f"Compared on the {count} questions every file holds." if count else "These files share no question.",
                "",
            ]
        lines += method_table(same)
        if against is not None:
            reference = _named(same, against)
            lines += _paired_lines(reference, same) if reference else [f"No run named {against} on {dataset}.", ""]
    lines += ["Results files:", "", *(f"* `{run.path}`" for run in runs), ""]
    return "\n".join(lines)
