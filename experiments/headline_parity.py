"""Does today's code still run what the results page reports?  Rerun the first questions of the page's SeaKR runs
(``runs/results/DATASET_dev/seakr.jsonl.gz``) exactly as ``experiments/results.sh`` ran them (``seakr eval --dataset
DATASET`` with the line range) and compare each question's answer, LM calls, searches and generated tokens with the
record.

    python experiments/headline_parity.py [--questions 16] [--out /tmp/parity]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from seakr_integrations.evaluation.results import read_results

ROOT = Path(__file__).resolve().parents[1]
START = {"hotpotqa": 8, "2wiki": 0}


def rows(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in read_results(path)[1] if "id" in r}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=16, help="per dataset (default 16)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/seakr-headline-parity"))
    args = parser.parse_args()
    seakr = Path(sys.executable).parent / "seakr"
    same = total = 0
    for ds, start in START.items():
        out = args.out / f"{ds}.jsonl"
        out.unlink(missing_ok=True)
        subprocess.run(
            [str(seakr), "eval", "--dataset", ds, "--start", str(start), "--limit", str(args.questions), "--out",
             str(out), "-q"],
            cwd=ROOT, check=True,
        )  # fmt: skip
        reported = rows(ROOT / "runs" / "results" / f"{ds}_dev" / "seakr.jsonl.gz")
        for qid, now in rows(out).items():
            then = reported[qid]
            keys = ("prediction", "lm_calls", "retrievals", "generated_tokens")
            equal = all(now[k] == then[k] for k in keys)
            same += equal
            total += 1
            print(json.dumps({"dataset": ds, "id": qid, "same": equal, **{k: [now[k], then[k]] for k in keys}}))
    print(f"{same} of {total} questions gave the reported answer, LM calls, searches and generated tokens")


if __name__ == "__main__":
    main()
