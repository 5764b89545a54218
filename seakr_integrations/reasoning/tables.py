"""The decision trace as flat rows (one per step, candidate passage, final answer), as people read it in a notebook
(``pandas.DataFrame(step_rows(trace))``).  Each function takes a :class:`SeaKRResult` or its ``to_dict()`` form (a
chain's ``trace``, a response's ``metadata["trace"]``); an uncertainty that could not be computed is ``inf``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seakr_integrations.reasoning.trace import SeaKRResult

TraceLike = SeaKRResult | Mapping[str, Any]


def _as_result(trace: TraceLike) -> SeaKRResult:
    if isinstance(trace, SeaKRResult):
        return trace
    if isinstance(trace, Mapping):
        return SeaKRResult.from_dict(dict(trace))
    raise TypeError(
        f"expected a SeaKRResult or its to_dict() form, got {type(trace).__name__}; pass result, chain "
        "output['trace'] or response.metadata['trace']"
    )


def step_rows(trace: TraceLike) -> list[dict[str, Any]]:
    """One row per round of the loop: what the model wrote, how unsure it was, what it decided and kept.

    Columns: ``step`` (1-based), ``uncertainty``, ``decision``, ``pseudo_generation``, ``query``,
    ``masked_words``, ``candidates`` (how many passages were tried), ``chosen_title``, ``chosen_passage_id``,
    ``accepted`` (the text appended to the reasoning), ``stop`` (a ``StopReason``, or ``None``).
    """
    rows = []
    for step in _as_result(trace).steps:
        chosen = next((c for c in step.candidates if c.chosen), None)
        rows.append(
            {
                "step": step.index + 1,
                "uncertainty": step.uncertainty.value,
                "decision": step.decision,
                "pseudo_generation": step.pseudo_generation.strip(),
                "query": step.query,
                "masked_words": ", ".join(step.masked_words),
                "candidates": len(step.candidates),
                "chosen_title": chosen.passage.title if chosen else None,
                "chosen_passage_id": step.chosen_passage_id,
                "accepted": (step.accepted or "").strip() or None,
                "stop": step.stop,
            }
        )
    return rows


def candidate_rows(trace: TraceLike) -> list[dict[str, Any]]:
    """One row per passage tried in a re-ranking round: its search rank against the model's uncertainty.

    Columns: ``step`` (1-based), ``search_rank``, ``search_score``, ``title``, ``id``, ``uncertainty``, ``rank_value``
    (what the re-ranking compared: the uncertainty, or ``inf`` when the model wrote an empty step after reading the
    passage), ``chosen`` (whether it was kept), ``generation`` (the step written with the passage in context).
    """
    return [
        {
            "step": step.index + 1,
            "search_rank": c.rank,
            "search_score": c.passage.score,
            "title": c.passage.title,
            "id": c.passage.id,
            "uncertainty": c.uncertainty.value,
            "rank_value": c.rank_value,
            "chosen": c.chosen,
            "generation": c.generation.strip(),
        }
        for step in _as_result(trace).steps
        for c in step.candidates
    ]


def final_rows(trace: TraceLike) -> list[dict[str, Any]]:
    """One row per final answer candidate (rationales vs knowledge, or direct vs passage): the less uncertain won.

    Columns: ``strategy``, ``answer``, ``uncertainty``, ``won``, ``forced``, ``context``, ``generation``.
    """
    result = _as_result(trace)
    return [
        {
            "strategy": strategy,
            "answer": final.answer,
            "uncertainty": final.uncertainty.value,
            "won": strategy == result.strategy,
            "forced": final.forced,
            "context": ", ".join(final.context),
            "generation": final.generation.strip(),
        }
        for strategy, final in result.finals.items()
    ]
