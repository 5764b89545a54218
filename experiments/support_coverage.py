"""How many of each question's gold supporting passages a method's answer saw, by question type: SeaKR's kept
passages against the passages in single retrieval's prompt (``runs/results``), with the passages per question.

    python experiments/support_coverage.py [--dataset hotpotqa] [--methods seakr single-retrieval]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from seakr_integrations.evaluation.results import read_results

ROOT = Path(__file__).resolve().parents[1]


def coverage(path: Path) -> dict[str, tuple[int, float, float]]:
    """Question type (and ``all``) -> (questions, share of supporting titles among the passages, passages / q)."""
    by_type: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for row in read_results(path)[1]:
        if row.get("error") or not row.get("supporting_titles"):
            continue
        titles = {p.get("title") for p in row["trace"]["passages"]}
        gold = set(row["supporting_titles"])
        seen = (len(gold & titles) / len(gold), len(titles))
        by_type[row.get("type", "?")].append(seen)
        by_type["all"].append(seen)
    return {t: (len(v), statistics.mean(s for s, _ in v), statistics.mean(n for _, n in v)) for t, v in by_type.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="hotpotqa", choices=["hotpotqa", "2wiki"])
    parser.add_argument("--methods", nargs="+", default=["seakr", "single-retrieval"])
    args = parser.parse_args()
    print("| method | question type | questions | supporting passages seen | passages / q |")
    print("| --- | --- | ---: | ---: | ---: |")
    for method in args.methods:
        for kind, (n, share, passages) in sorted(
            coverage(ROOT / "runs" / "results" / f"{args.dataset}_dev" / f"{method}.jsonl.gz").items()
        ):
            print(f"| {method} | {kind} | {n} | {share:.2f} | {passages:.2f} |")


if __name__ == "__main__":
    main()
