"""The report's decision tables: what the SeaKR-family runs decided (gate, re-ranking, final answer), read from their
traces, and the questions SeaKR lost by the widest margin with its decisions."""

from __future__ import annotations

from experiments.decisions import (
    RetrievalBenefit,
    decision_summary,
    describe_trace,
    gate_agreement,
    retrieval_benefit,
)
from experiments.method_runs import MethodRun, main_run, run_named

__all__ = ["decision_section"]


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def decision_section(dataset: str, group: list[MethodRun], examples: int) -> list[str]:
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
    seakr = main_run(group)
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
    single = run_named(group, "single-retrieval")
    cot = run_named(group, "cot")
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
