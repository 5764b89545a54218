"""Did SeaKR's gate retrieve on the questions where retrieval helps?  (the gate analysis of docs/results_40q.md)

A question counts as *helped by retrieval* when single retrieval's F1 on it is above CoT's: both run on SeaKR's
prompts and differ only in the one retrieved passage.  The script prints how many helped questions SeaKR retrieved
on, the three methods' F1 on the questions SeaKR did and did not retrieve for, and the AUROC of the first step's
uncertainty for ranking the helped questions above the others (0.5 is chance).

    python bench/gate_analysis.py runs/hotpotqa_dev runs/2wiki_dev
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from seakr_integrations.evaluation.auroc import auroc
from seakr_integrations.evaluation.report import load_runs


def _load(directory: Path, method: str) -> dict[str, dict]:
    (run,) = load_runs([directory / f"{method}.jsonl"])
    return {str(r["id"]): r for r in run.records}


def _mean_f1(records: dict[str, dict], ids: list[str]) -> str:
    return f"{100 * statistics.mean(records[q]['f1'] for q in ids):.1f}" if ids else "-"


def analyse(directory: Path) -> None:
    seakr, single, cot = (_load(directory, m) for m in ("seakr", "single-retrieval", "cot"))
    ids = [q for q in seakr if q in single and q in cot]
    helped = {q for q in ids if single[q]["f1"] > cot[q]["f1"]}
    retrieved = [q for q in ids if seakr[q]["retrievals"] > 0]
    skipped = [q for q in ids if seakr[q]["retrievals"] == 0]
    print(f"{directory.name}: {len(ids)} questions, {len(helped)} helped by retrieval")
    print(f"  SeaKR retrieved on {len(retrieved)}, of them {len(helped & set(retrieved))} helped ones")
    for name, group in (("retrieved", retrieved), ("never retrieved", skipped)):
        print(
            f"  {name} ({len(group)}): seakr {_mean_f1(seakr, group)}, single-retrieval {_mean_f1(single, group)},"
            f" cot {_mean_f1(cot, group)}"
        )
    first = {q: seakr[q]["trace"]["steps"][0]["uncertainty"]["value"] for q in ids}
    pos, neg = [first[q] for q in ids if q in helped], [first[q] for q in ids if q not in helped]
    if pos and neg:
        score = auroc([first[q] for q in ids], [q in helped for q in ids])  # "wrong" = helped: high U should flag it
        print(
            f"  first-step uncertainty: median {statistics.median(pos):.2f} (helped) vs {statistics.median(neg):.2f};"
            f" AUROC {score:.2f}"
        )


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["runs/hotpotqa_dev", "runs/2wiki_dev"]:
        analyse(Path(arg))
