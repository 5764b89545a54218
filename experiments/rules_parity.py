"""Does today's code decide as the committed run of the shipped default?  Re-run the first questions of
``runs/results/DATASET_dev/seakr.jsonl.gz`` (``experiments/results.sh``'s run of ``SeaKRConfig()``) with the
configuration its header records, rebuilt by ``run_settings``, and compare answers, LM calls and searches question by
question: a change to the loop or the rules that is meant to change nothing must keep all of them.

    python experiments/rules_parity.py [--questions 16] [--out runs/checks/rules_parity.txt]
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def committed(dataset: str, limit: int) -> tuple[Path, list[dict]]:
    """The committed run of the default on ``dataset`` and its first ``limit`` answered questions."""
    path = ROOT / "runs" / "results" / f"{dataset}_dev" / "seakr.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in list(lines)[1:]]
    return path, [r for r in records if "error" not in r][:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=16, help="per dataset, the run's first (default 16)")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "checks" / "rules_parity.txt")
    args = parser.parse_args()

    from seakr_integrations.backends.loading import load_backend
    from seakr_integrations.cli.backend import quiet_vllm_start
    from seakr_integrations.demo import cached_index
    from seakr_integrations.evaluation.results import read_header, run_settings
    from seakr_integrations.reasoning import SeaKR

    runs = {ds: committed(ds, args.questions) for ds in ("hotpotqa", "2wiki")}
    made = {(h["backend"], h["model"], h["dtype"]) for h in (read_header(path) for path, _ in runs.values())}
    if len(made) != 1:
        raise SystemExit(f"the committed runs were made with different models: {sorted(made)}")
    ((kind, model, dtype),) = made
    quiet_vllm_start()
    report = []
    with load_backend(kind, model, dtype=dtype) as backend:
        for ds, (path, records) in runs.items():
            index = cached_index(ROOT / "data" / f"corpus_{ds}.jsonl", progress=False)
            seakr = SeaKR(backend, index, run_settings(path))
            for i, result in seakr.iter_answers([r["question"] for r in records], max_in_flight=8):
                old = records[i]
                now = (result.answer, result.lm_calls, result.searches)
                then = (old["prediction"], old["lm_calls"], old["retrievals"])
                report.append({"dataset": ds, "id": old["id"], "same": now == then, "now": now, "then": then})
                print(json.dumps(report[-1]), flush=True)
    same = sum(r["same"] for r in report)
    summary = f"{same} of {len(report)} questions gave the same answer, LM calls and searches as the committed run"
    print(summary)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in report) + summary + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
