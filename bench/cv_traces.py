"""What SeaKR's traces show on the cross-validated questions, per question type (a section of docs/results.md,
written by ``cv_report.py``)."""

from __future__ import annotations

import numpy as np


def trace_lines(ours: dict[str, dict], single: dict[str, dict]) -> list[str]:
    """What SeaKR's traces show per question type: its F1 beside single retrieval's on the same questions, and how
    many of the gold supporting passages it had kept when it answered; then how its answers fared when the model
    stated an answer before every supporting passage was kept."""
    types: dict[str, list[tuple[float, float, float]]] = {}
    for qid, row in ours.items():
        if qid not in single:
            continue
        kept = {p.get("title") for p in row["trace"].get("passages", [])}
        gold = set(row.get("supporting_titles") or [])
        recall = len(kept & gold) / len(gold) if gold else float("nan")
        types.setdefault(row.get("type") or "?", []).append((row["f1"], single[qid]["f1"], recall))
    out = [
        "| question type | questions | SeaKR F1 | single retrieval F1 | supporting passages kept |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, rows in sorted(types.items()):
        f1, theirs, recall = (np.nanmean([r[i] for r in rows]) for i in range(3))
        out.append(f"| {name} | {len(rows)} | {100 * f1:.1f} | {100 * theirs:.1f} | {recall:.2f} |")
    stated = [r for r in ours.values() if r["trace"].get("stop_reason") == "answer found"]
    covered = [
        r
        for r in stated
        if set(r.get("supporting_titles") or []) <= {p.get("title") for p in r["trace"].get("passages", [])}
    ]
    if stated and len(covered) < len(stated):
        rest = [r for r in stated if r not in covered]
        out += [
            "",
            f"The loop ended because the model stated an answer on {len(stated)} of {len(ours)} questions; on "
            f"{len(rest)} of them it had not kept every gold supporting passage (F1 "
            f"{100 * np.mean([r['f1'] for r in rest]):.1f}, against {100 * np.mean([r['f1'] for r in covered]):.1f} "
            f"where it had kept them all).",
        ]
    return out
