"""The report's wording around the library's tables: what the shared questions leave out, and SeaKR against each
method question by question.

The numbers come from ``seakr_integrations.evaluation.summary`` (``method_table``, ``paired_rows``), which
``seakr report`` prints too; the main report and its confirmation section put them in the same words.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.method_runs import MethodRun
from seakr_integrations.evaluation.summary import paired_rows

__all__ = ["paired_lines", "shared_questions_note"]


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


def paired_lines(seakr: MethodRun, others: Sequence[MethodRun]) -> list[str]:
    """SeaKR against each method question by question: the mean F1 difference with a paired bootstrap interval.

    Intervals per method overlap even when one method is ahead on nearly every question; resampling the questions
    with both answers attached is what says whether a gap outlasts the choice of questions.
    """
    rows = paired_rows(seakr, others)
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
