"""The decision trace as flat rows: one per reasoning step, per candidate passage, per final answer.

A trace is nested (steps hold candidates, candidates hold uncertainties).  People read it as tables, in a notebook
(``pandas.DataFrame(step_rows(trace))``), a spreadsheet or an evaluation report.  The rows are built from the
trace's JSON form, so the same functions read a live :class:`SeaKRResult`, the ``trace`` a LangChain
``SeaKRChain`` returns, a LlamaIndex response's ``metadata["trace"]`` and a trace read back from a results file.
Uncertainties that were infinite (an empty generation) are ``None`` in the JSON form and stay ``None`` here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seakr_integrations.reasoning.trace import SeaKRResult

__all__ = ["candidate_rows", "final_rows", "step_rows"]

TraceLike = SeaKRResult | Mapping[str, Any]


def _plain_trace(trace: TraceLike) -> Mapping[str, Any]:
    if isinstance(trace, SeaKRResult):
        return trace.to_dict()
    if isinstance(trace, Mapping) and "steps" in trace and "finals" in trace:
        return trace
    raise TypeError(
        "expected a SeaKRResult or its to_dict() form (a mapping with 'steps' and 'finals'), got "
        f"{type(trace).__name__}; pass result, chain output['trace'] or response.metadata['trace']"
    )


def _value(uncertainty: Mapping[str, Any] | None) -> float | None:
    return None if uncertainty is None else uncertainty.get("value")


def step_rows(trace: TraceLike) -> list[dict[str, Any]]:
    """One row per round of the loop: what the model wrote, how unsure it was, what it decided and kept.

    Columns: ``step`` (1-based), ``uncertainty``, ``decision``, ``pseudo_generation``, ``query``,
    ``masked_words``, ``candidates`` (how many passages were tried), ``chosen_title``, ``chosen_id``,
    ``accepted`` (the text appended to the reasoning), ``stop``.
    """
    rows = []
    for step in _plain_trace(trace)["steps"]:
        chosen = next((c for c in step["candidates"] if c["chosen"]), None)
        rows.append(
            {
                "step": step["index"] + 1,
                "uncertainty": _value(step["uncertainty"]),
                "decision": step["decision"],
                "pseudo_generation": step["pseudo_generation"].strip(),
                "query": step["query"],
                "masked_words": ", ".join(step["masked_words"]),
                "candidates": len(step["candidates"]),
                "chosen_title": chosen["title"] if chosen else None,
                "chosen_id": step["chosen"],
                "accepted": (step["accepted"] or "").strip() or None,
                "stop": step["stop"],
            }
        )
    return rows


def candidate_rows(trace: TraceLike) -> list[dict[str, Any]]:
    """One row per passage tried in a re-ranking round: its search rank against the model's uncertainty.

    Columns: ``step`` (1-based), ``search_rank``, ``search_score``, ``title``, ``id``, ``uncertainty``,
    ``rank_value`` (what the re-ranking compared: the uncertainty, or ``None`` (infinite) when the model wrote an
    empty step after reading the passage), ``chosen``, ``generation`` (the step written with the passage in
    context).
    """
    return [
        {
            "step": step["index"] + 1,
            "search_rank": c["search_rank"],
            "search_score": c["search_score"],
            "title": c["title"],
            "id": c["id"],
            "uncertainty": _value(c["uncertainty"]),
            "rank_value": c["rank_value"],
            "chosen": c["chosen"],
            "generation": c["generation"].strip(),
        }
        for step in _plain_trace(trace)["steps"]
        for c in step["candidates"]
    ]


def final_rows(trace: TraceLike) -> list[dict[str, Any]]:
    """One row per final answer candidate (rationales vs knowledge, or direct vs passage): the less uncertain won.

    Columns: ``strategy``, ``answer``, ``uncertainty``, ``won``, ``forced``, ``context``, ``generation``.
    """
    plain = _plain_trace(trace)
    return [
        {
            "strategy": strategy,
            "answer": final["answer"],
            "uncertainty": _value(final["uncertainty"]),
            "won": strategy == plain["strategy"],
            "forced": final["forced"],
            "context": ", ".join(final["context"]),
            "generation": final["generation"].strip(),
        }
        for strategy, final in plain["finals"].items()
    ]
