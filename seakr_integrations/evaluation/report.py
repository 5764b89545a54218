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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from seakr_integrations.evaluation.auroc import auroc
from seakr_integrations.evaluation.decisions import (
    RetrievalBenefit,
    decision_summary,
    describe_trace,
    gate_agreement,
    retrieval_benefit,
)
from seakr_integrations.evaluation.results import read_results
from seakr_integrations.evaluation.runner import EvalSummary, summarize
from seakr_integrations.reasoning.trace import SeaKRResult, trace_version

__all__ = ["MethodRun", "bootstrap_interval", "load_runs", "paired_lines", "write_report"]


@dataclass
class MethodRun:
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
    def name(self) -> str:
        """The row's label: the method, and the file's name when it differs (one method run with other settings)."""
        stem = self.path.stem
        return self.method if stem == self.method else f"{self.method} ({stem})"

    def summary(self) -> EvalSummary:
        return summarize(self.records)


def _read_trace(record: dict[str, Any], path: Path) -> dict[str, Any]:
    """``record`` with its SeaKR trace read through the typed loader (``SeaKRResult.from_dict``) and written back in
    this release's form, whatever release wrote it; a record of another method (closed-book's scores) as it is.

    Raises:
        ValueError: The trace is malformed or newer than this release reads (the message names the file and question).
    """
    trace = record.get("trace")
    try:
        if trace_version(trace) is None:
            return record
        return {**record, "trace": SeaKRResult.from_dict(trace).to_dict()}
    except ValueError as err:
        raise ValueError(f"{path}, question {record.get('id')!r}: {err}") from None


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[MethodRun]:
    """Read results files (directories are searched for ``*.jsonl``); empty files are reported, not dropped.

    Every SeaKR trace in them is read through ``SeaKRResult.from_dict`` (so a file of an older release reads as
    this release's traces, and one of a newer release is refused with a clear error)."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
    if not files:
        raise ValueError("no results files given: pass seakr eval outputs (files, or directories holding them)")
    runs = []
    for f in files:
        config, records = read_results(f)
        run = MethodRun(f, config, [_read_trace(r, f) for r in records])
        if not run.records:
            raise ValueError(f"{f} holds no results yet: finish (or resume) its seakr eval run, or leave it out")
        runs.append(run)
    return runs


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


def _on_shared_questions(group: Sequence[MethodRun]) -> tuple[list[MethodRun], int]:
    """The runs of one dataset cut to the questions all of them answered, and how many those are: methods are
    compared on the same questions even when one file was extended further (closed-book for AUROC, a resumed run).
    With no question in common the runs are returned whole."""
    shared = set.intersection(*({str(r["id"]) for r in run.records} for run in group))
    if not shared:
        return list(group), 0
    return [replace(run, records=[r for r in run.records if str(r["id"]) in shared]) for run in group], len(shared)


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


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def _decision_section(dataset: str, group: list[MethodRun], examples: int) -> list[str]:
    """Tables of what the SeaKR-family runs decided, the gate against closed-book knowledge, and lost examples."""
    summaries = [(run, decision_summary(run.records)) for run in group]
    summaries = [(run, s) for run, s in summaries if s is not None]
    if not summaries:
        return []
    lines = [
        f"What the methods on {dataset} decided (from their traces): the gate (rounds that retrieved; rounds where "
        "the model wrote nothing, which the gate treats as uncertain), the re-ranking (kept passage below the search "
        "engine's first; rounds where the model wrote nothing after any candidate, so the search order decided; kept "
        "vs search-first passage supporting, where the dataset names supporting titles) and the final answer "
        "(strategies chosen; mean F1 of the answer given, of the other final answer, and of the better of the two; "
        "mean F1 of each final answer had it always been given, which is what the rationales-only and "
        "knowledge-only ablations answer, read from the same trace). "
        "Baselines that search with the question first (single retrieval, IRCoT) have no generation in that round, "
        "so it counts as empty for them by design.",
        "",
        "| method | first step retrieved | rounds retrieving | empty rounds | kept below search-first "
        "| re-ranking blind | kept supporting | search-first supporting | final strategies "
        "| F1 given / other / better | F1 of each final |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for run, s in sorted(summaries, key=lambda item: item[0].name):
        finals = ", ".join(f"{k} {v}" for k, v in sorted(s.strategies.items()))
        f1s = f"{100 * s.chosen_f1:.1f}"
        each = ", ".join(f"{k} {100 * v:.1f}" for k, v in s.final_f1.items())
        if s.other_f1 is not None and s.best_f1 is not None:
            f1s += f" / {100 * s.other_f1:.1f} / {100 * s.best_f1:.1f} ({s.two_finals} q)"
        lines.append(
            f"| {run.name} | {_pct(s.first_step_retrievals, s.questions)} | {_pct(s.retrieve_steps, s.steps)} | "
            f"{_pct(s.empty_steps, s.steps)} | {_pct(s.picked_below_first, s.rerank_rounds)} | "
            f"{_pct(s.blind_rounds, s.rerank_rounds)} | {_pct(s.chosen_supporting, s.titled_rounds)} | "
            f"{_pct(s.first_supporting, s.titled_rounds)} | {finals} | {f1s} | {each} |"
        )
    lines.append("")
    closed = next((run for run in group if run.method == "closed-book"), None)
    seakr = next((run for run in group if run.name == "seakr"), None)
    if closed is not None and seakr is not None:
        gate = gate_agreement(seakr.records, closed.records)
        if gate is not None:
            known = gate["known_skipped"] + gate["known_retrieved"]
            unknown = gate["unknown_skipped"] + gate["unknown_retrieved"]
            lines += [
                f"SeaKR's first-step gate against what the model knew closed-book (EM > 0) on {dataset}: of {known} "
                f"known questions it skipped retrieval for {gate['known_skipped']}; of {unknown} unknown ones it "
                f"retrieved for {gate['unknown_retrieved']}.",
                "",
            ]
    single = next((run for run in group if run.name == "single-retrieval"), None)
    cot = next((run for run in group if run.name == "cot"), None)
    if seakr is not None and single is not None and cot is not None:
        benefit = retrieval_benefit(seakr.records, single.records, cot.records)
        if benefit is not None:
            lines += _benefit_lines(dataset, benefit)
    if seakr is not None and examples > 0:
        lines += _lost_examples(dataset, seakr, [run for run in group if run is not seakr], examples)
    return lines


def _f1(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _benefit_lines(dataset: str, b: RetrievalBenefit) -> list[str]:
    """SeaKR's gate against the questions where one retrieval helped (single retrieval's F1 above CoT's)."""
    lines = [
        f"Did SeaKR retrieve where retrieval helps? On {dataset}, single retrieval scored above CoT (same prompts, "
        f"one retrieved passage apart) on {b.helped} of {b.questions} questions; SeaKR retrieved on {b.retrieved} "
        f"questions, {b.helped_retrieved} of them helped ones.",
        "",
        "| SeaKR's gate | questions | SeaKR F1 | single retrieval F1 | CoT F1 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for label, g in (("retrieved", b.on_retrieved), ("never retrieved", b.on_skipped)):
        lines.append(f"| {label} | {g.questions} | {_f1(g.seakr)} | {_f1(g.single_retrieval)} | {_f1(g.cot)} |")
    lines.append("")
    if b.auroc is not None and b.median_helped is not None and b.median_other is not None:
        lines += [
            f"First-step uncertainty, median: {b.median_helped:.2f} on the helped questions, {b.median_other:.2f} "
            f"on the others; AUROC {b.auroc:.2f} for ranking the helped ones higher (0.5 is chance).",
            "",
        ]
    return lines


def _lost_examples(dataset: str, seakr: MethodRun, others: list[MethodRun], count: int) -> list[str]:
    """The questions where another method beat SeaKR by the widest F1 margin, with SeaKR's decisions."""
    best: dict[str, tuple[float, str, str]] = {}
    for run in others:
        if run.method.startswith("seakr"):
            continue  # ablations share SeaKR's path; the interesting losses are to other methods
        for r in run.records:
            if r["id"] not in best or r["f1"] > best[r["id"]][0]:
                best[r["id"]] = (r["f1"], run.method, r["prediction"])
    lost = [
        (best[r["id"]][0] - r["f1"], r)
        for r in seakr.records
        if r["id"] in best and best[r["id"]][0] > r["f1"] and "trace" in r
    ]
    if not lost:
        return []
    lines = [f"Questions of {dataset} that SeaKR lost by the widest F1 margin, with its decisions:", ""]
    for _, r in sorted(lost, key=lambda item: (-item[0], item[1]["id"]))[:count]:
        f1, method, prediction = best[r["id"]]
        lines.append(
            f'* **{r["question"]}** gold {r["golds"]}; SeaKR "{r["prediction"]}" (F1 {r["f1"]:.2f}), '
            f'{method} "{prediction}" (F1 {f1:.2f})'
        )
        lines += [f"  * {line}" for line in describe_trace(r)]
    lines.append("")
    return lines


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
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.stem
    by_dataset: dict[str, list[MethodRun]] = defaultdict(list)
    for run in runs:
        by_dataset[run.dataset].append(run)
    shared = {dataset: _on_shared_questions(group) for dataset, group in by_dataset.items()}
    compared = [run for group, _ in shared.values() for run in group]
    plots = _plots(list(runs), compared, list(profiles), out.parent, stem)
    lines = [f"# {title}", "", "Generated by `seakr report` from the results files listed below; do not edit.", ""]
    if notes:
        lines += [notes.strip(), ""]
    if commands:
        lines += ["## Commands", "", "```bash", commands.strip(), "```", ""]
    for dataset, group in sorted(by_dataset.items()):
        lines += [f"## {dataset}", ""]
        same, count = shared[dataset]
        more = [f"{run.name} ({len(run.records)})" for run in group if len(run.records) > count]
        if more and count:
            lines += [
                f"Methods compared on the {count} questions every results file holds; "
                f"{', '.join(more)} answered more, left out here (closed-book's extra answers count in its AUROC).",
                "",
            ]
        elif more:
            lines += ["These results files share no question: each row is over its own questions.", ""]
        lines += [
            "| method | questions | EM | F1 | F1 95% CI | retrievals / q | LM calls / q | tokens / q | s / q |",
            "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for run in sorted(same, key=lambda r: -r.summary().f1):
            s = run.summary()
            lo, hi = bootstrap_interval([r["f1"] for r in run.records])
            lines.append(
                f"| {run.name} | {s.questions} | {100 * s.em:.1f} | {100 * s.f1:.1f} | {100 * lo:.1f}-{100 * hi:.1f} "
                f"| {s.retrievals:.2f} | {s.lm_calls:.1f} | {s.generated_tokens:.0f} | {s.seconds:.1f} |"
            )
        lines.append("")
        seakr = next((run for run in same if run.name == "seakr"), None)
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
        lines += _decision_section(dataset, same, examples)
    lines += _sweep_section(profiles)
    if plots:
        lines += ["## Plots", ""]
        for caption, name in plots:
            lines += [f"**{caption}**", "", f"![{caption}]({name})", ""]
    lines += ["## Results files and their configurations", ""]
    for run in runs:
        cfg = run.config
        seakr = cfg.get("seakr", {})
        lines.append(
            f"* `{run.path}`: {run.method} on {cfg.get('dataset')}, model {cfg.get('model')} ({cfg.get('backend')}), "
            f"k={seakr.get('k')}, delta={seakr.get('delta')}, estimator={seakr.get('estimator')}, "
            f"retriever {json.dumps(cfg.get('retriever'))}"
        )
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
