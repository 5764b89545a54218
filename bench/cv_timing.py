"""The cost part of docs/results.md's target: SeaKR's and single retrieval's seconds per question from the timing runs
on an idle machine (``bench/timing.sh``), grouped by how many questions were in progress at once, and SeaKR's
generated tokens against the earlier default's.  Read by ``bench/cv_report.py``, whose loaders these use."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def in_flight(root: Path) -> int:
    """How many questions a timing run kept in progress at once (``bench/timing.sh`` writes it to ``in_flight``)."""
    return int((root / "in_flight").read_text())


def dtype(root: Path) -> str:
    """The weights' precision of a timing run (``bench/timing.sh`` writes it to ``dtype``; older runs: float32)."""
    path = root / "dtype"
    return path.read_text().strip() if path.is_file() else "float32"


def timing_runs(ds: str) -> dict[int, list[dict[str, float]]]:
    """Each timing run on an idle machine (``bench/timing.sh``: ``runs/timing``, ``runs/timing-2``...; the same 60
    questions of fold 1, streamed), by how many questions were in progress at once: SeaKR's and single retrieval's
    seconds per question (the run's wall time over its questions) and SeaKR's generated tokens per question.  Only
    float32 runs, the precision of the cross-validation (a bfloat16 run is in docs/benchmarks.md)."""
    from cv_report import ROOT, read

    runs: dict[int, list[dict[str, float]]] = {}
    for root in sorted(p for p in (ROOT / "runs").glob("timing*") if p.is_dir() and dtype(p) == "float32"):
        got = {m: read(root / f"{ds}_dev" / "fold1" / f"{m}.jsonl") for m in ("seakr", "single-retrieval")}
        if all(got.values()):
            runs.setdefault(in_flight(root), []).append(
                {
                    "seakr": float(np.mean([r["seconds"] for r in got["seakr"].values()])),
                    "single": float(np.mean([r["seconds"] for r in got["single-retrieval"].values()])),
                    "tokens": float(np.mean([r["generated_tokens"] for r in got["seakr"].values()])),
                }
            )
    return dict(sorted(runs.items()))


def cost_lines(ds: str, fold_means: dict[str, float], single_seconds: float, done: tuple[int, int]) -> list[str]:
    """The cost parts of the target, from the timing runs on an idle machine (the means of the runs made with the
    same number of questions in progress, one line per number) when there are some, else from the fold runs above."""
    from cv_report import ROOT, TODAY, read, summary, verdict

    today = summary(list(read(ROOT / TODAY.format(ds=ds)).values()))["generated_tokens"]
    by_load = timing_runs(ds)
    if not by_load:
        seconds, theirs, tokens = fold_means["seconds"], single_seconds, fold_means["generated_tokens"]
        return [
            f"* At most 5x single retrieval's seconds (mean seconds per question of the fold runs above): "
            f"{seconds:.1f} s against {theirs:.2f} s ({seconds / theirs:.1f}x): "
            f"{verdict(seconds <= 5 * theirs, *done)}",
            f"* Generated tokens at most half of today's default (its run on lines 220-299: {today:.0f} per question; "
            f"the fold runs above): {tokens:.0f} ({tokens / today:.2f}x): {verdict(tokens <= today / 2, *done)}",
        ]
    lines = []
    for load, runs in by_load.items():
        seconds, theirs = np.mean([r["seakr"] for r in runs]), np.mean([r["single"] for r in runs])
        each = ", ".join(
            f"{r['seakr']:.1f} s against {r['single']:.2f} s ({r['seakr'] / r['single']:.1f}x)" for r in runs
        )
        lines.append(
            f"* At most 5x single retrieval's seconds, {load} questions in progress at once (wall time over questions "
            f"on fold 1, {len(runs)} run(s) on an idle machine, `bench/timing.sh`: {each}; together): {seconds:.1f} s "
            f"against {theirs:.2f} s ({seconds / theirs:.1f}x): {verdict(seconds <= 5 * theirs, *done)}"
        )
    tokens = float(np.mean([r["tokens"] for runs in by_load.values() for r in runs]))
    lines.append(
        f"* Generated tokens at most half of today's default (its run on lines 220-299: {today:.0f} per question; mean "
        f"per question of the timing runs): {tokens:.0f} ({tokens / today:.2f}x): {verdict(tokens <= today / 2, *done)}"
    )
    return lines
