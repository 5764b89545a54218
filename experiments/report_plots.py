"""The report's plots (F1 per method, closed-book uncertainty histograms, delta sweeps) and the delta sweeps of
calibration profiles as tables.

Drawn with matplotlib (the ``notebooks`` extra), which only this project's report needs: ``seakr report`` prints
tables alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.method_runs import MethodRun
from seakr_integrations.evaluation.summary import bootstrap_interval

__all__ = ["draw_plots", "sweep_section"]


def draw_plots(
    runs: list[MethodRun], compared: list[MethodRun], sweeps: list[dict[str, Any]], out_dir: Path, stem: str
) -> list[tuple[str, str]]:
    """Draw the PNGs (F1 from ``compared``, the closed-book histograms from every answer in ``runs``); returns
    (title, file name) pairs."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - the notebooks extra is part of the dev set-up
        raise RuntimeError("the report draws with matplotlib: pip install 'seakr-integrations[notebooks]'") from err
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


def sweep_section(profiles: Sequence[dict[str, Any]]) -> list[str]:
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
