"""What SeaKR decided over a whole run, read from the traces: the gate, the re-ranking and the final choice.

A score table says whether SeaKR won; these counts say why.  Each of SeaKR's three decisions can be checked
against something the results files already hold: the gate against whether the model knew the answer closed-book
(the ``closed-book`` run of the same questions), the re-ranking against the dataset's supporting passages, and
the final choice against the answer it did not choose (both are in the trace, so both can be scored).

The closed-book label says nothing when the model almost never knows an answer (a 0.5B model gets 1 of 100 right),
so the gate is also checked against a second label that needs no right closed-book answer: did retrieval help on
this question?  Single retrieval and CoT run on SeaKR's prompts and differ only in the one retrieved passage, so
single retrieval scoring above CoT marks a question where one retrieval was worth making.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seakr_integrations.evaluation.auroc import auroc
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.reasoning.jsonform import number_from_json

__all__ = [
    "DecisionSummary",
    "GroupF1",
    "RetrievalBenefit",
    "decision_summary",
    "describe_trace",
    "gate_agreement",
    "retrieval_benefit",
]


@dataclass(frozen=True)
class DecisionSummary:
    """Counts over the questions of one SeaKR-family run (see :func:`decision_summary`).

    Attributes:
        questions: Questions with a SeaKR trace.
        steps: Reasoning rounds in all.
        retrieve_steps: Rounds whose decision was to retrieve.
        empty_steps: Rounds where the model wrote nothing (the uncertainty is then ``inf``, so the gate retrieves).
        first_step_retrievals: Questions whose first round retrieved.
        rerank_rounds: Retrieval rounds that had at least two new passages to choose from.
        picked_below_first: Of those, rounds where the kept passage was not the search engine's first.
        blind_rounds: Of those, rounds where the model wrote nothing after every candidate, so the uncertainties
            could not rank them and the search order decided.
        titled_rounds: Re-ranking rounds of questions whose supporting titles are known.
        chosen_supporting: Of those, rounds whose kept passage is a supporting passage.
        first_supporting: Of those, rounds whose search-first candidate is a supporting passage.
        strategies: How often each final strategy answered.
        chosen_f1: Mean F1 of the answers given.
        other_f1: Mean F1 the other final answer would have had (questions with two final answers only).
        best_f1: Mean F1 of the better of the two final answers (the most a perfect choice could give).
        two_finals: Questions with two final answers to choose from.
        final_f1: Mean F1 of each final strategy's answer over the questions that computed it, whichever was given:
            the rationales-only and knowledge-only ablations read from the same run (both finals are computed
            before the choice, from the same steps and passages).
    """

    questions: int
    steps: int
    retrieve_steps: int
    empty_steps: int
    first_step_retrievals: int
    rerank_rounds: int
    picked_below_first: int
    blind_rounds: int
    titled_rounds: int
    chosen_supporting: int
    first_supporting: int
    strategies: dict[str, int] = field(default_factory=dict)
    chosen_f1: float = 0.0
    other_f1: float | None = None
    best_f1: float | None = None
    two_finals: int = 0
    final_f1: dict[str, float] = field(default_factory=dict)


def _is_seakr_trace(trace: Any) -> bool:
    return isinstance(trace, Mapping) and "steps" in trace and "finals" in trace and "config" in trace


def decision_summary(records: Sequence[Mapping[str, Any]]) -> DecisionSummary | None:
    """Sum the decisions in ``records``' traces; ``None`` when no record has a SeaKR-loop trace."""
    traced = [r for r in records if _is_seakr_trace(r.get("trace"))]
    if not traced:
        return None
    steps = retrieve_steps = empty = first = rerank = below = blind = titled = chosen_sup = first_sup = 0
    strategies: Counter[str] = Counter()
    chosen_f1, other_f1, best_f1 = [], [], []
    final_f1: dict[str, list[float]] = {}
    for record in traced:
        trace = record["trace"]
        golds = record["golds"]
        gold_titles = {t.casefold() for t in record.get("supporting_titles", ())}
        for step in trace["steps"]:
            steps += 1
            empty += not step["pseudo_generation"].strip()
            if step["decision"] == "retrieve":
                retrieve_steps += 1
                first += step["index"] == 0
            candidates = step["candidates"]
            if len(candidates) < 2:
                continue
            rerank += 1
            chosen = next((c for c in candidates if c["chosen"]), None)
            top = min(candidates, key=lambda c: c["search_rank"])
            below += chosen is not None and chosen is not top
            blind += all(not math.isfinite(number_from_json(c.get("rank_value"))) for c in candidates)
            if gold_titles:
                titled += 1
                chosen_sup += chosen is not None and chosen["title"].casefold() in gold_titles
                first_sup += top["title"].casefold() in gold_titles
        strategies[trace["strategy"]] += 1
        chosen_f1.append(record["f1"])
        scores = {strategy: score(final["answer"] or "", golds).f1 for strategy, final in trace["finals"].items()}
        for strategy, f1 in scores.items():
            final_f1.setdefault(strategy, []).append(f1)
        if len(scores) == 2:
            other_score = next(f1 for strategy, f1 in scores.items() if strategy != trace["strategy"])
            other_f1.append(other_score)
            best_f1.append(max(record["f1"], other_score))
    return DecisionSummary(
        questions=len(traced),
        steps=steps,
        retrieve_steps=retrieve_steps,
        empty_steps=empty,
        first_step_retrievals=first,
        rerank_rounds=rerank,
        picked_below_first=below,
        blind_rounds=blind,
        titled_rounds=titled,
        chosen_supporting=chosen_sup,
        first_supporting=first_sup,
        strategies=dict(strategies),
        chosen_f1=sum(chosen_f1) / len(chosen_f1),
        other_f1=sum(other_f1) / len(other_f1) if other_f1 else None,
        best_f1=sum(best_f1) / len(best_f1) if best_f1 else None,
        two_finals=len(other_f1),
        final_f1={strategy: sum(f1s) / len(f1s) for strategy, f1s in sorted(final_f1.items())},
    )


def gate_agreement(
    seakr: Sequence[Mapping[str, Any]], closed_book: Sequence[Mapping[str, Any]]
) -> dict[str, int] | None:
    """How SeaKR's first-step gate matched what the model knew: closed-book right (EM > 0) or wrong, by retrieval.

    Returns counts ``known_skipped``, ``known_retrieved``, ``unknown_skipped``, ``unknown_retrieved`` over the
    questions both runs answered (a good gate skips retrieval for known questions and retrieves for the others),
    or ``None`` when they share no question.
    """
    closed = {r["id"]: r for r in closed_book}
    counts = Counter({"known_skipped": 0, "known_retrieved": 0, "unknown_skipped": 0, "unknown_retrieved": 0})
    shared = 0
    for record in seakr:
        trace = record.get("trace")
        if record["id"] not in closed or not _is_seakr_trace(trace) or not trace["steps"]:
            continue
        shared += 1
        known = "known" if closed[record["id"]]["em"] > 0 else "unknown"
        retrieved = "retrieved" if trace["steps"][0]["decision"] == "retrieve" else "skipped"
        counts[f"{known}_{retrieved}"] += 1
    return dict(counts) if shared else None


@dataclass(frozen=True)
class GroupF1:
    """Mean F1 of SeaKR, single retrieval and CoT over one group of questions (``None`` for an empty group)."""

    questions: int
    seakr: float | None
    single_retrieval: float | None
    cot: float | None


@dataclass(frozen=True)
class RetrievalBenefit:
    """SeaKR's gate against where retrieval helped (see :func:`retrieval_benefit`).

    Attributes:
        questions: Questions all three runs answered with a SeaKR trace.
        helped: Of those, questions where single retrieval's F1 is above CoT's.
        retrieved: Questions where SeaKR retrieved at any step.
        helped_retrieved: Helped questions SeaKR retrieved on.
        on_retrieved: The three methods' F1 on the questions SeaKR retrieved on.
        on_skipped: The three methods' F1 on the questions SeaKR never retrieved on.
        median_helped: Median first-step uncertainty of the helped questions (``inf``: the model wrote nothing).
        median_other: Median first-step uncertainty of the other questions.
        auroc: AUROC of the first-step uncertainty for ranking helped questions above the others (0.5 is chance);
            ``None`` when every question or none was helped.
    """

    questions: int
    helped: int
    retrieved: int
    helped_retrieved: int
    on_retrieved: GroupF1
    on_skipped: GroupF1
    median_helped: float | None
    median_other: float | None
    auroc: float | None


def _first_uncertainty(trace: Mapping[str, Any]) -> float:
    return number_from_json((trace["steps"][0].get("uncertainty") or {}).get("value"))


def retrieval_benefit(
    seakr: Sequence[Mapping[str, Any]],
    single_retrieval: Sequence[Mapping[str, Any]],
    cot: Sequence[Mapping[str, Any]],
) -> RetrievalBenefit | None:
    """Did SeaKR retrieve on the questions where retrieval helped, and was its first uncertainty high there?

    Returns ``None`` when the three runs share no question with a SeaKR trace.
    """
    single = {str(r["id"]): r for r in single_retrieval}
    plain = {str(r["id"]): r for r in cot}
    own = {
        str(r["id"]): r
        for r in seakr
        if _is_seakr_trace(r.get("trace")) and r["trace"]["steps"] and str(r["id"]) in single and str(r["id"]) in plain
    }
    if not own:
        return None
    helped = {q for q in own if single[q]["f1"] > plain[q]["f1"]}
    retrieved = {q for q, r in own.items() if any(s["decision"] == "retrieve" for s in r["trace"]["steps"])}

    def group(ids: set[str]) -> GroupF1:
        def mean(records: Mapping[str, Mapping[str, Any]]) -> float | None:
            return statistics.mean(records[q]["f1"] for q in ids) if ids else None

        return GroupF1(len(ids), mean(own), mean(single), mean(plain))

    first = {q: _first_uncertainty(r["trace"]) for q, r in own.items()}
    ids = sorted(own)
    pos = [first[q] for q in ids if q in helped]
    neg = [first[q] for q in ids if q not in helped]
    return RetrievalBenefit(
        questions=len(own),
        helped=len(helped),
        retrieved=len(retrieved),
        helped_retrieved=len(helped & retrieved),
        on_retrieved=group(retrieved),
        on_skipped=group(set(own) - retrieved),
        median_helped=statistics.median(pos) if pos else None,
        median_other=statistics.median(neg) if neg else None,
        auroc=auroc([first[q] for q in ids], [q in helped for q in ids]) if pos and neg else None,
    )


def _u(uncertainty: Mapping[str, Any] | None) -> str:
    value = number_from_json(None if uncertainty is None else uncertainty.get("value"))
    return f"{value:.2f}" if math.isfinite(value) else str(value)


def describe_trace(record: Mapping[str, Any]) -> list[str]:
    """A SeaKR record's decisions as short Markdown list items: each round, the candidates, the final choice."""
    trace = record["trace"]
    delta = trace["config"]["delta"]
    gold_titles = {t.casefold() for t in record.get("supporting_titles", ())}

    def title(name: str) -> str:
        return f"'{name}'" + (" (supporting)" if name.casefold() in gold_titles else "")

    lines = []
    for step in trace["steps"]:
        text = step["pseudo_generation"].strip().replace("\n", " ")
        line = f"step {step['index'] + 1}: U = {_u(step['uncertainty'])} vs delta {delta:.2f} -> {step['decision']}"
        line += f'; wrote "{text[:120]}"'
        if step["candidates"]:
            tried = ", ".join(
                f"#{c['search_rank']} {title(c['title'])} U={_u(c['uncertainty'])}"
                + ("" if c["generation"].strip() else " (wrote nothing: ranks last)")
                + (" **kept**" if c["chosen"] else "")
                for c in step["candidates"]
            )
            line += f'; query "{step["query"]}"; {tried}'
        lines.append(line)
    finals = ", ".join(
        f'{strategy} "{final["answer"]}" U={_u(final["uncertainty"])}' for strategy, final in trace["finals"].items()
    )
    lines.append(f"final: {finals} -> {trace['strategy']}")
    return lines
