"""The default loop chosen by cross-validation, as ``docs/evaluation_protocol.md`` fixed it before the runs.

Reads the candidates' runs of ``experiments/loop_variants.py`` (``runs/loops/DATASET/NAME.jsonl[.gz]``, single
retrieval among them), and for each fold ``i % 5`` of the question lines chooses, among the candidates whose mean
generated tokens on the other folds (both datasets) is at most ``TOKEN_BUDGET``, the cheapest of those within
``F1_BAND`` of the highest mean F1 there; the estimate is each fold's answers by the candidate chosen without it,
paired with single retrieval's.  The default that ships is the candidate chosen on all five folds.

    python experiments/loop_cv.py [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from seakr_integrations.evaluation.results import finished_results, read_results
from seakr_integrations.evaluation.summary import bootstrap_interval

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "loops"
DATASETS = ("hotpotqa", "2wiki")
BASELINE = "single-retrieval"
TOKEN_BUDGET = 350
F1_BAND = 1.0
"""F1 points within which a cheaper candidate is taken over the best (the noise of a paired difference here)."""
FOLDS = range(5)


def line_numbers(dataset: str) -> dict[str, int]:
    """Question id -> its 0-based line in the dataset's question file (the fold is ``line % 5``)."""
    lines = (ROOT / "data" / f"{dataset}_dev.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: i for i, line in enumerate(lines)}


def gold_seen(record: dict) -> float | None:
    """The share of the question's gold supporting passages among the passages its answer saw."""
    gold = set(record.get("supporting_titles") or [])
    if not gold:
        return None
    return len(gold & {p.get("title") for p in record["trace"]["passages"]}) / len(gold)


def load() -> dict[str, list[dict]]:
    """Every run's answered records, each tagged with its dataset and fold, by run name."""
    runs: dict[str, list[dict]] = {}
    for dataset in DATASETS:
        folds = {i: n % 5 for i, n in line_numbers(dataset).items()}
        for name in sorted({p.name.split(".jsonl")[0] for p in (RUNS / dataset).glob("*.jsonl*")}):
            _, rows = read_results(finished_results(RUNS / dataset / f"{name}.jsonl"))
            answered = [r for r in rows if "id" in r and not r.get("error")]
            runs.setdefault(name, []).extend({**r, "dataset": dataset, "fold": folds[r["id"]]} for r in answered)
    return runs


def mean(rows: list[dict], key: str) -> float:
    return statistics.mean(r[key] for r in rows)


def choose(runs: dict[str, list[dict]], folds: set[int]) -> str:
    """The candidate the protocol chooses on ``folds``: within the token budget, the fewest tokens among those
    within ``F1_BAND`` of the highest F1."""
    scored = []
    for name, rows in runs.items():
        if name == BASELINE:
            continue
        on = [r for r in rows if r["fold"] in folds]
        if mean(on, "generated_tokens") <= TOKEN_BUDGET:
            scored.append((100 * mean(on, "f1"), mean(on, "generated_tokens"), name))
    if not scored:
        raise ValueError(f"no candidate within {TOKEN_BUDGET} tokens a question on folds {sorted(folds)}")
    best = max(f1 for f1, _, _ in scored)
    return min((tokens, name) for f1, tokens, name in scored if f1 >= best - F1_BAND)[1]


def summary(rows: list[dict], baseline: dict[tuple[str, str], dict]) -> dict:
    """F1, its difference from single retrieval (paired), gold passages seen and cost, over ``rows``."""
    paired = [r["f1"] - baseline[(r["dataset"], r["id"])]["f1"] for r in rows]
    f1_lo, f1_hi = bootstrap_interval([r["f1"] for r in rows])
    lo, hi = bootstrap_interval(paired)
    seen = [s for r in rows if (s := gold_seen(r)) is not None]
    seen_base = [s for r in rows if (s := gold_seen(baseline[(r["dataset"], r["id"])])) is not None]
    return {
        "questions": len(rows),
        "f1": 100 * mean(rows, "f1"),
        "f1_interval": [100 * f1_lo, 100 * f1_hi],
        "minus_single_retrieval": 100 * statistics.mean(paired),
        "minus_single_retrieval_interval": [100 * lo, 100 * hi],
        "gold_seen": statistics.mean(seen),
        "gold_seen_single_retrieval": statistics.mean(seen_base),
        "lm_calls": mean(rows, "lm_calls"),
        "generated_tokens": mean(rows, "generated_tokens"),
        "searches": mean(rows, "retrievals"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    opts = parser.parse_args()
    runs = load()
    baseline = {(r["dataset"], r["id"]): r for r in runs[BASELINE]}
    chosen = {f: choose(runs, set(FOLDS) - {f}) for f in FOLDS}
    held_out = [r for f in FOLDS for r in runs[chosen[f]] if r["fold"] == f]
    shipped = choose(runs, set(FOLDS))
    report = {
        "chosen_by_fold": chosen,
        "shipped": shipped,
        "cross_validated": {d: summary([r for r in held_out if r["dataset"] == d], baseline) for d in DATASETS},
        "candidates": {
            name: {d: summary([r for r in rows if r["dataset"] == d], baseline) for d in DATASETS}
            for name, rows in sorted(runs.items())
            if name != BASELINE
        },
    }
    if opts.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"chosen without each fold: {chosen}; on all five folds (ships): {shipped}")
    print(
        "| | dataset | q | F1 (95%) | minus single retrieval (95%) | gold seen (single retrieval) | LM calls | tokens |"
    )
    print("| --- | --- | ---: | --- | --- | --- | ---: | ---: |")
    rows = [("cross-validated", report["cross_validated"])] + list(report["candidates"].items())
    for name, by_dataset in rows:
        for dataset, s in by_dataset.items():
            print(
                f"| {name} | {dataset} | {s['questions']} | {s['f1']:.1f} ({s['f1_interval'][0]:.1f}-"
                f"{s['f1_interval'][1]:.1f}) | {s['minus_single_retrieval']:+.1f} "
                f"({s['minus_single_retrieval_interval'][0]:+.1f} to {s['minus_single_retrieval_interval'][1]:+.1f}) | "
                f"{s['gold_seen']:.2f} ({s['gold_seen_single_retrieval']:.2f}) | {s['lm_calls']:.1f} | "
                f"{s['generated_tokens']:.0f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
