#!/usr/bin/env bash
# Seconds per question of single retrieval, the default SeaKR and the token gate, measured in one run with nothing
# else on the machine, on the same 60 questions of each dataset (lines i % 5 == 1 of the first 300), IN_FLIGHT in progress at once
# (seakr eval's stream; 8 unless given), a fresh engine each, `seakr eval`'s defaults (SeaKRConfig(), the shipped
# calibration profile). Seconds per question: the run's wall time over its questions (each record holds its share).
# Results in OUT/DATASET_dev/fold1/; the ratios are printed.
#
#   bash bench/timing.sh [OUT] [IN_FLIGHT]    # OUT: the results root (default runs/timing); IN_FLIGHT is written to
#                                             # OUT/in_flight
#   DTYPE=bfloat16 bash bench/timing.sh /tmp/timing-bf16   # the weights' precision (default float32), written
#                                             # to OUT/dtype
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-runs/timing}"
in_flight="${2:-8}"
mkdir -p "$out/questions"
echo "$in_flight" > "$out/in_flight"
echo "${DTYPE:-float32}" > "$out/dtype"
for ds in hotpotqa 2wiki; do
  questions="$out/questions/${ds}_fold1.jsonl"
  awk 'NR <= 300 && (NR - 1) % 5 == 1' "data/${ds}_dev.jsonl" > "$questions"
  for method in single-retrieval seakr token-gate; do
    # the token gate's threshold: fitted on the results page's training runs (lines 200-299)
    train=()
    if [ "$method" = token-gate ]; then
      if [ ! -e "runs/results/train/$ds/cot.jsonl.gz" ]; then
        echo "token gate not timed on $ds: its training runs (runs/results/train/$ds) are missing; bash experiments/results.sh makes them" >&2
        continue
      fi
      train=(--train-results "runs/results/train/$ds")
    fi
    flock /tmp/seakr-heavy.lock .venv/bin/seakr eval --dataset "$questions" --corpus "data/corpus_${ds}.jsonl" \
      --style "$ds" --method "$method" --batch-size "$in_flight" --dtype "${DTYPE:-float32}" "${train[@]}" \
      --out "$out/${ds}_dev/fold1/$method.jsonl" -q
  done
done
OUT="$out" .venv/bin/python - <<'PY'
import json, os, statistics
from pathlib import Path

for ds in ("hotpotqa", "2wiki"):
    per = {}
    for method in ("single-retrieval", "seakr", "token-gate"):
        path = Path(os.environ["OUT"], f"{ds}_dev", "fold1", f"{method}.jsonl")
        if not path.exists():  # the token gate without its training runs (said above)
            per[method] = (float("nan"),) * 4 + (0,)
            continue
        rows = [json.loads(x) for x in path.read_text().splitlines()[1:]]
        per[method] = (statistics.mean(r["seconds"] for r in rows), statistics.mean(r["generated_tokens"] for r in rows),
                       statistics.mean(r["lm_calls"] for r in rows), statistics.mean(r["f1"] for r in rows), len(rows))
    (s_single, tok_s, calls_s, f1_s, n), (s_seakr, tok_k, calls_k, f1_k, _) = per["single-retrieval"], per["seakr"]
    s_gate, tok_g, calls_g, f1_g, _ = per["token-gate"]
    print(f"{ds}: {n} questions; seconds per question (wall time over questions): single retrieval {s_single:.2f}, "
          f"SeaKR {s_seakr:.2f} ({s_seakr / s_single:.1f}x), token gate {s_gate:.2f} ({s_gate / s_single:.1f}x); "
          f"LM calls {calls_s:.1f} / {calls_k:.1f} / {calls_g:.1f}; generated tokens {tok_s:.0f} / {tok_k:.0f} / "
          f"{tok_g:.0f}; F1 {100 * f1_s:.1f} / {100 * f1_k:.1f} / {100 * f1_g:.1f}")
PY
