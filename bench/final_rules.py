"""Replay every final-answer rule of docs/cv_protocol.md on the development fold's traces, and pick the default.

The ``seakr-both-finals`` runs on fold 0 (``runs/cv/DATASET_dev/fold0/seakr-both-finals.jsonl``) keep both final
answers of every question, each with its EigenScore and its cascade-signal reading, and the loop's own steps; so any
of the candidate rules gives its answer without a new LM call.  Prints F1 and EM per rule and dataset, and writes the
table to ``runs/cv/final_rules.json`` (the chosen rule: best F1 over both datasets' fold 0, ties to the cheaper).

    python bench/final_rules.py
    python bench/final_rules.py --held-out   # the chosen rule replayed on the held-out folds
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ("hotpotqa", "2wiki")
LEFT_OUT = {"hotpotqa": set(range(8))}  # the smoke-test lines (docs/cv_protocol.md)

Final = dict  # a final answer as the trace stores it


def _value(final: Final, key: str) -> float:
    reading = final.get(key) or {}
    value = reading.get("value")
    return math.inf if value is None or (isinstance(value, str) and value != "-inf") else float(value)


def _pick(trace: dict, key: str, margin: float) -> str | None:
    from seakr_integrations.reasoning.answer import is_unknown
    from seakr_integrations.reasoning.rules import pick_final

    finals = trace["finals"]
    if len(finals) == 1:
        return next(iter(finals.values()))["answer"]
    r, k = finals["rationales"], finals["knowledge"]
    strategy = pick_final(
        _value(r, key),
        _value(k, key),
        rationales_unknown=is_unknown(r["answer"]),
        knowledge_unknown=is_unknown(k["answer"]),
        margin=margin,
    )
    return finals[strategy]["answer"]


def _knowledge(trace: dict) -> str | None:
    finals = trace["finals"]
    return (finals.get("knowledge") or finals["rationales"])["answer"]


def _stated(trace: dict) -> str | None:
    from seakr_integrations.reasoning.answer import extract_answer, is_unknown

    steps = trace["steps"]
    if not steps or steps[-1].get("stop") != "answer found":
        return None
    accepted = [s["accepted"] for s in steps if s.get("accepted")]
    answer = extract_answer(accepted[-1]) if accepted else None
    return None if is_unknown(answer) else answer


RULES: dict[str, tuple[Callable[[dict], str | None], int]] = {
    # name: (rule, final calls with samples: the cost order used to break ties)
    "paper (EigenScore)": (lambda t: _pick(t, "uncertainty", 0.0), 2),
    "EigenScore, margin 0.5": (lambda t: _pick(t, "uncertainty", 0.5), 2),
    "EigenScore, margin 1": (lambda t: _pick(t, "uncertainty", 1.0), 2),
    "EigenScore, margin 2": (lambda t: _pick(t, "uncertainty", 2.0), 2),
    "cascade signal": (lambda t: _pick(t, "screen", 0.0), 0),
    "knowledge when kept": (_knowledge, 0),
}


def replay(dataset: str) -> list[dict]:
    path = ROOT / "runs" / "cv" / f"{dataset}_dev" / "fold0" / "seakr-both-finals.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    lines = {json.loads(q)["id"]: i for i, q in enumerate((ROOT / "data" / f"{dataset}_dev.jsonl").open())}
    return [r for r in rows if lines[r["id"]] not in LEFT_OUT.get(dataset, set()) and "trace" in r]


def main() -> None:
    from seakr_integrations.evaluation.scoring import score

    table: dict[str, dict[str, dict[str, float]]] = {}
    for dataset in DATASETS:
        rows = replay(dataset)
        for name, (rule, _) in RULES.items():
            for stated_first in (False, True):
                label = f"stated, else {name}" if stated_first else name
                scores = []
                for r in rows:
                    answer = (_stated(r["trace"]) if stated_first else None) or rule(r["trace"]) or ""
                    scores.append(score(answer, r["golds"]))
                table.setdefault(label, {})[dataset] = {
                    "questions": len(scores),
                    "f1": sum(s.f1 for s in scores) / len(scores),
                    "em": sum(s.em for s in scores) / len(scores),
                }
    for by in table.values():
        n = sum(v["questions"] for v in by.values())
        by["both"] = {"f1": sum(v["f1"] * v["questions"] for v in by.values()) / n, "questions": n}

    def cost(label: str) -> float:  # sampled final calls; a stated answer skips the final calls when there is one
        return RULES[label.removeprefix("stated, else ")][1] - (0.5 if label.startswith("stated") else 0.0)

    chosen = max(table, key=lambda label: (round(table[label]["both"]["f1"], 6), -cost(label)))
    for label, by in sorted(table.items(), key=lambda kv: -kv[1]["both"]["f1"]):
        cells = "  ".join(f"{ds} F1 {by[ds]['f1']:.3f}" for ds in DATASETS if ds in by)
        print(f"{label:40s} {cells}  both {by['both']['f1']:.3f}" + ("   <- chosen" if label == chosen else ""))
    (ROOT / "runs" / "cv" / "final_rules.json").write_text(json.dumps({"rules": table, "chosen": chosen}, indent=2))


def held_out() -> None:
    """The default final rule (``final_strategy="knowledge"``, with ``answer_with_option``) replayed on the held-out
    folds' runs of the previous default, which kept both final answers: F1 as run and replayed, paired."""
    from option_answers import interval

    from seakr_integrations.evaluation.scoring import score
    from seakr_integrations.reasoning.entities import option_answer
    from seakr_integrations.retrieval.passage import Passage

    for dataset in DATASETS:
        before, after = [], []
        for path in sorted((ROOT / "runs" / "cv" / f"{dataset}_dev").glob("fold[1-4]/seakr-both-finals.jsonl")):
            for r in (json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()):
                if "trace" not in r:
                    continue
                passages = [
                    Passage(id=p["id"], title=p.get("title", ""), text=p["text"]) for p in r["trace"]["passages"]
                ]
                answer = option_answer(r["question"], _knowledge(r["trace"]) or "", passages, [])
                before.append(r["f1"])
                after.append(score(answer, r["golds"]).f1)
        diffs = [a - b for a, b in zip(after, before, strict=True)]
        low, high = interval(diffs)
        n = len(diffs)
        print(
            f"{dataset} folds 1-4: {n} questions; F1 as run {100 * sum(before) / n:.1f}, knowledge final "
            f"{100 * sum(after) / n:.1f} (paired {100 * sum(diffs) / n:+.1f}, "
            f"95% {100 * low:+.1f} to {100 * high:+.1f})"
        )


if __name__ == "__main__":
    held_out() if sys.argv[1:] == ["--held-out"] else main()
