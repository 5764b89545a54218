#!/usr/bin/env bash
# The seconds-per-question comparison behind the target of docs/results.md, measured in one run with nothing else on
# the machine: single retrieval, then the default SeaKR (delta and cascade band calibrated on the other folds, as in
# the cross-validation), on the same 60 questions (fold 1) of each dataset, batches of 8, fresh engine each.
# Results in runs/timing/DATASET_dev/fold1/; the medians and ratios are printed and quoted in docs/benchmarks.md.
#
#   bash bench/timing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
for ds in hotpotqa 2wiki; do
  for method in single-retrieval seakr; do
    flock /tmp/seakr-heavy.lock .venv/bin/python bench/cv_seakr.py --dataset "$ds" --folds 1 --method "$method" \
      --out runs/timing
  done
done
.venv/bin/python - <<'PY'
import json, statistics
from pathlib import Path

for ds in ("hotpotqa", "2wiki"):
    per = {}
    for method in ("single-retrieval", "seakr"):
        rows = [json.loads(x) for x in Path(f"runs/timing/{ds}_dev/fold1/{method}.jsonl").read_text().splitlines()[1:]]
        per[method] = (statistics.median(r["seconds"] for r in rows), statistics.mean(r["seconds"] for r in rows),
                       statistics.mean(r["generated_tokens"] for r in rows), len(rows))
    (ms, mean_s, tok_s, n), (mk, mean_k, tok_k, _) = per["single-retrieval"], per["seakr"]
    print(f"{ds}: {n} questions; seconds per question, median (mean): single retrieval {ms:.2f} ({mean_s:.2f}), "
          f"SeaKR {mk:.2f} ({mean_k:.2f}); ratio of medians {mk / ms:.1f}x, of means {mean_k / mean_s:.1f}x; "
          f"generated tokens per question {tok_s:.0f} vs {tok_k:.0f}")
PY
