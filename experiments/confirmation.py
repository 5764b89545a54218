"""The report's confirmation section: the default SeaKR against the paper's rules and the baselines, on questions
that no choice was made on.

A choice made on some questions and checked on others can still flatter itself: the confirmation is the one run
that says whether it holds.  So the section states the target's outcome from the numbers themselves (met or
missed, by how much) rather than leaving it to prose written after seeing them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from experiments.method_runs import MethodRun, main_run, on_shared_questions, run_named
from experiments.report_decisions import decision_section
from experiments.report_tables import paired_lines, shared_questions_note
from seakr_integrations.evaluation.summary import method_table

__all__ = ["DEFAULT_RUN", "PAPER_RUN", "confirmation_section", "target_lines"]

DEFAULT_RUN = "seakr"
"""The method of the library's default SeaKR (``--method seakr``): its run is ``seakr.jsonl``, or the one file of
that method renamed for the rules it ran (e.g. ``seakr-rules-0-99.jsonl``, a confirmation run of commit f0839c6); see
``method_runs.main_run``."""

PAPER_RUN = "seakr-paper"
"""The row of SeaKR with the authors' decision rules (``SeaKRConfig.paper()``): the default before the
confirmation, so its LM calls on the same questions are what "no more LM calls than today" is measured against."""


def _is_baseline(run: MethodRun) -> bool:
    """A method that is not SeaKR: every one of them is a baseline the default must match or beat."""
    return not run.method.startswith("seakr")


def target_lines(runs: Sequence[MethodRun]) -> list[str]:
    """The target's outcome on one dataset's runs (already cut to shared questions): the default SeaKR's F1 at
    least every baseline's, with no more LM calls per question than SeaKR with the paper's rules."""
    default = main_run(runs, DEFAULT_RUN)
    if default is None:
        several = ", ".join(run.name for run in runs if run.method == DEFAULT_RUN)
        if several:
            return [
                f"Which run is the default? Several of method `{DEFAULT_RUN}` ({several}) and none in "
                f"`{DEFAULT_RUN}.jsonl`, so the target is not checked.",
                "",
            ]
        return [f"No `{DEFAULT_RUN}` results here, so the target is not checked.", ""]
    mine = default.summary()
    baselines = sorted((run for run in runs if _is_baseline(run)), key=lambda r: -r.summary().f1)
    lines = []
    if baselines:
        best = baselines[0]
        gap = 100 * (mine.f1 - best.summary().f1)
        names = ", ".join(run.name for run in baselines)
        outcome = "**met**" if gap >= 0 else f"**missed**, by {-gap:.1f} F1"
        lines.append(
            f"* F1: the default SeaKR scores {100 * mine.f1:.1f}; the best baseline, {best.name}, scores "
            f"{100 * best.summary().f1:.1f} ({gap:+.1f}). This part of the target is {outcome}. Baselines run: {names}."
        )
    else:
        lines.append("* F1: no baseline has run on these questions, so this part of the target is not checked.")
    paper = run_named(runs, PAPER_RUN)
    if paper is not None:
        theirs = paper.summary().lm_calls
        outcome = "**met**" if mine.lm_calls <= theirs else f"**missed**, by {mine.lm_calls - theirs:.1f}"
        lines.append(
            f"* LM calls per question: the default SeaKR makes {mine.lm_calls:.1f}, SeaKR with the paper's rules "
            f"{theirs:.1f}. This part of the target is {outcome}."
        )
    else:
        lines.append(
            f"* LM calls per question: the default SeaKR makes {mine.lm_calls:.1f}. `{PAPER_RUN}` has not answered "
            "all these questions, so the comparison with the paper's rules is not made here."
        )
    return [*lines, ""]


def _finished(runs: Sequence[MethodRun]) -> tuple[list[MethodRun], list[MethodRun], int]:
    """The runs that answered as many questions as the largest, those still short of it (a run in progress,
    resumed later), and that largest count: a confirmation compares every method on every question, so a short
    run waits."""
    size = max(len(run.records) for run in runs)
    finished = [run for run in runs if len(run.records) == size]
    return finished, [run for run in runs if len(run.records) < size], size


def confirmation_section(runs: Sequence[MethodRun], *, notes: str = "", examples: int = 3) -> list[str]:
    """Markdown for the confirmation runs: per dataset, the outcome of the target, the method table, SeaKR against
    each method question by question, and what the SeaKR runs decided."""
    lines = ["## Confirmation on questions never used for any choice", ""]
    if notes:
        lines += [notes.strip(), ""]
    by_dataset: dict[str, list[MethodRun]] = defaultdict(list)
    for run in runs:
        by_dataset[run.dataset].append(run)
    for dataset, group in sorted(by_dataset.items()):
        lines += [f"### {dataset}: confirmation", ""]
        group, unfinished, size = _finished(group)
        if unfinished:
            lines += [
                "Still running, so left out of this section until it has answered every question: "
                + ", ".join(f"{run.name} ({len(run.records)} of {size} questions)" for run in unfinished)
                + ".",
                "",
            ]
        same, count = on_shared_questions(group)
        lines += shared_questions_note(group, count)
        lines += target_lines(same)
        lines += method_table(same)
        default = main_run(same, DEFAULT_RUN)
        if default is not None:
            lines += paired_lines(default, same)
        lines += decision_section(f"{dataset} (confirmation)", same, examples)
    return lines
