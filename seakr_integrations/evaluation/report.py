"""``seakr report``: results files in, a Markdown report with tables and PNG plots out.

The report is generated, never written by hand, so every number in it can be traced to a results file and every
results file to the command and configuration in its header.  Tables: per dataset, each method's EM and F1 (with a
bootstrap 95 % interval for F1) and its costs per question; the uncertainty estimators' AUROC for predicting a
wrong closed-book answer.  Plots: per-method F1 with intervals, uncertainty histograms of right and wrong
closed-book answers, and retrieval rate against F1 as delta sweeps (from calibration profiles).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seakr_integrations.evaluation.auroc import auroc
from seakr_integrations.evaluation.confirmation import confirmation_section
from seakr_integrations.evaluation.method_runs import MethodRun, on_shared_questions, run_named
from seakr_integrations.evaluation.report_decisions import decision_section
from seakr_integrations.evaluation.report_tables import (
    bootstrap_interval,
    method_table,
    paired_lines,
    shared_questions_note,
)

__all__ = ["write_report"]


def _estimator_aurocs(run: MethodRun) -> dict[str, tuple[float | None, int]]:
    """AUROC per estimator for predicting a wrong (EM = 0) closed-book answer, and the answers scored."""
    out: dict[str, tuple[float | None, int]] = {}
    names = sorted({n for r in run.records for n in r.get("trace", {}).get("uncertainty", {})})
    for name in names:
        scored = [r for r in run.records if name in r.get("trace", {}).get("uncertainty", {})]
        values = [r["trace"]["uncertainty"][name] for r in scored]
        scores = [float("inf") if v is None else v for v in values]
        wrong = [r["em"] == 0.0 for r in scored]
        try:
            out[name] = (auroc(scores, wrong), len(scores))
        except ValueError:
            out[name] = (None, len(scores))  # all right or all wrong: no AUROC
    return out


def _plots(
    runs: list[MethodRun], compared: list[MethodRun], sweeps: list[dict[str, Any]], out_dir: Path, stem: str
) -> list[tuple[str, str]]:
    """Draw the PNGs (F1 from ``compared``, the closed-book histograms from every answer in ``runs``); returns
    (title, file name) pairs."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - the notebooks extra is part of the dev set-up
        raise RuntimeError("seakr report draws with matplotlib: pip install 'seakr-integrations[notebooks]'") from err
    drawn = []
    by_dataset: dict[str, list[MethodRun]] = defaultdict(list)
    for run in compared:
        by_dataset[run.dataset].append(run)

    fig, axes = plt.subplots(1, len(by_dataset), figsize=(6 * len(by_dataset), 4), squeeze=False)
    for ax, (dataset, group) in zip(axes[0], sorted(by_dataset.items()), strict=True):
        group = sorted(group, key=lambda r: r.name)
        means = [r.summary().f1 for r in group]
        intervals = [bootstrap_interval([x["f1"] for x in r.records]) for r in group]
        low = [m - lo for m, (lo, _) in zip(means, intervals, strict=True)]
        high = [hi - m for m, (_, hi) in zip(means, intervals, strict=True)]
        ax.barh([r.name for r in group], means, xerr=np.array([low, high]), color="tab:blue", alpha=0.8, capsize=3)
        ax.set_xlabel("F1 (95% bootstrap interval)")
        ax.set_title(f"{dataset} (n = {min(len(r.records) for r in group)})", fontsize=10)
    fig.tight_layout()
    name = f"{stem}_f1.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    drawn.append(("F1 per method", name))

    closed = [r for r in runs if r.method == "closed-book"]
    if closed:
        fig, axes = plt.subplots(1, len(closed), figsize=(6 * len(closed), 3.6), squeeze=False)
        for ax, run in zip(axes[0], closed, strict=True):
            values = [(r["trace"]["uncertainty"].get("eigenscore"), r["em"] == 1.0) for r in run.records]
            right = [v for v, ok in values if ok and v is not None]
            wrong = [v for v, ok in values if not ok and v is not None]
            bins = np.histogram_bin_edges(right + wrong, bins=15) if right + wrong else 10
            ax.hist(wrong, bins=bins, alpha=0.6, color="tab:red", label=f"wrong ({len(wrong)})")
            ax.hist(right, bins=bins, alpha=0.6, color="tab:green", label=f"right ({len(right)})")
            ax.set_xlabel("EigenScore of the closed-book answer")
            ax.set_title(run.dataset, fontsize=10)
            ax.legend(fontsize=8)
        fig.tight_layout()
        name = f"{stem}_uncertainty_hist.png"
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        drawn.append(("EigenScore of right and wrong closed-book answers", name))

    usable = _f1_sweeps(sweeps)
    if usable:
        fig, ax = plt.subplots(figsize=(6, 4))
        for profile in usable:
            rows = [row for row in profile["sweep"] if "f1" in row]
            ax.plot(
                [row["retrievals_per_question"] for row in rows],
                [row["f1"] for row in rows],
                "o-",
                label=f"{profile['model']} on {profile['dataset']}" + _questions_note(profile),
            )
            for row in rows:
                ax.annotate(f"{row['delta']:.2f}", (row["retrievals_per_question"], row["f1"]), fontsize=7)
            chosen = [row for row in rows if row.get("chosen")]
            ax.plot(
                [row["retrievals_per_question"] for row in chosen], [row["f1"] for row in chosen], "*", ms=14, color="k"
            )
        ax.set_xlabel("retrievals per question")
        ax.set_ylabel("F1")
        ax.set_title("delta sweep (points: delta; star: the calibrated delta)", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        name = f"{stem}_delta_sweep.png"
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        drawn.append(("Retrieval rate against F1 as delta sweeps", name))
    return drawn


def _f1_sweeps(profiles: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The profiles calibrated for F1 (a rate profile's sweep has no F1 to show)."""
    return [p for p in profiles if any("f1" in row for row in p.get("sweep", []))]


def _questions_note(profile: dict[str, Any]) -> str:
    return f" ({profile['questions']} q)" if profile.get("questions") else ""


def _sweep_section(profiles: Sequence[dict[str, Any]]) -> list[str]:
    """The F1 sweeps of calibration profiles as tables: what each threshold cost and scored."""
    swept = _f1_sweeps(profiles)
    if not swept:
        return []
    lines = ["## Delta sweeps (calibration, F1 objective)", ""]
    for profile in swept:
        lines += [
            f"{profile['model']} on {profile['dataset']}{_questions_note(profile)}, estimator "
            f"{profile.get('estimator', 'eigenscore')}: the chosen delta is marked.",
            "",
            "| delta | first-step retrieval rate | retrievals / q | EM | F1 |",
            "| ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in (r for r in profile["sweep"] if "f1" in r):
            rate = row.get("first_step_retrieval_rate")
            cells = [
                f"{row['delta']:.4f}" + (" (chosen)" if row.get("chosen") else ""),
                f"{rate:.2f}" if rate is not None else "",
                f"{row['retrievals_per_question']:.2f}",
                f"{100 * row['em']:.1f}" if "em" in row else "",
                f"{100 * row['f1']:.1f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def write_report(
    runs: Sequence[MethodRun],
    out: str | os.PathLike[str],
    *,
    profiles: Sequence[dict[str, Any]] = (),
    title: str = "SeaKR evaluation results",
    commands: str = "",
    notes: str = "",
    examples: int = 3,
    confirmation: Sequence[MethodRun] = (),
    confirmation_notes: str = "",
) -> Path:
    """Write the Markdown report and its PNG plots (next to it) and return the report's path.

    Args:
        runs: The results files, loaded.
        out: The report's path; the plots are written next to it.
        profiles: Calibration profiles whose delta sweeps to plot.
        title: The report's title.
        commands: The exact commands that produced the results (shown verbatim).
        notes: Markdown written by people (analysis, caveats), placed after the title.
        examples: Per dataset, how many questions SeaKR lost to another method to show with their decisions.
        confirmation: Runs on questions no choice was made on; their section, with the target's outcome, goes first.
        confirmation_notes: Markdown written by people about the confirmation, placed at the top of its section.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.stem
    by_dataset: dict[str, list[MethodRun]] = defaultdict(list)
    for run in runs:
        by_dataset[run.dataset].append(run)
    shared = {dataset: on_shared_questions(group) for dataset, group in by_dataset.items()}
    compared = [run for group, _ in shared.values() for run in group]
    plots = _plots(list(runs), compared, list(profiles), out.parent, stem)
    lines = [f"# {title}", "", "Generated by `seakr report` from the results files listed below; do not edit.", ""]
    if confirmation:
        lines += confirmation_section(confirmation, notes=confirmation_notes, examples=examples)
    if notes:
        lines += [notes.strip(), ""]
    if commands:
        lines += ["## Commands", "", "```bash", commands.strip(), "```", ""]
    for dataset, group in sorted(by_dataset.items()):
        lines += [f"## {dataset}", ""]
        same, count = shared[dataset]
        lines += shared_questions_note(group, count)
        lines += method_table(same)
        seakr = run_named(same, "seakr")
        if seakr is not None:
            lines += paired_lines(seakr, same)
        for run in group:
            if run.method == "closed-book":
                lines += [
                    f"Uncertainty quality on {dataset}: AUROC for predicting that the closed-book answer is wrong "
                    "(EM = 0); 0.5 is chance.",
                    "",
                    "| estimator | AUROC | answers |",
                    "| --- | ---: | ---: |",
                ]
                for name, (value, n) in sorted(_estimator_aurocs(run).items()):
                    wrong = sum(
                        r["em"] == 0.0 for r in run.records if name in r.get("trace", {}).get("uncertainty", {})
                    )
                    shown = f"{value:.3f}" if value is not None else f"n/a (all {n} {'wrong' if wrong else 'right'})"
                    lines.append(f"| {name} | {shown} | {n} ({wrong} wrong) |")
                lines.append("")
        lines += decision_section(dataset, same, examples)
    lines += _sweep_section(profiles)
    if plots:
        lines += ["## Plots", ""]
        for caption, name in plots:
            lines += [f"**{caption}**", "", f"![{caption}]({name})", ""]
    lines += ["## Results files and their configurations", ""]
    for run in [*confirmation, *runs]:
        cfg = run.config
        seakr = cfg.get("seakr", {})
        lines.append(
            f"* `{run.path}`: {run.method} on {cfg.get('dataset')}, model {cfg.get('model')} ({cfg.get('backend')}), "
            f"k={seakr.get('k')}, delta={seakr.get('delta')}, estimator={seakr.get('estimator')}, "
            f"retriever {json.dumps(cfg.get('retriever'))}"
        )
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
