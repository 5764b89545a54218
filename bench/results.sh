#!/usr/bin/env bash
# The runs behind docs/results.md (docs/evaluation_protocol.md): the shipped default exactly as `seakr eval` runs it,
# SeaKRConfig.paper() on a slice, and the baselines, on lines 8-199 of HotpotQA and 0-199 of 2Wiki (the lines the
# shipped profiles were not calibrated on), 8 questions in progress; then the page itself. Resumable: rerun to go
# on. About 4 hours on 2 CPU cores; the baselines and SeaKR run one after another, never together.
#
#   bash bench/results.sh            # writes runs/results/DATASET_dev/METHOD.jsonl, then docs/results.md
set -euo pipefail
cd "$(dirname "$0")/.."
SEAKR=${SEAKR:-.venv/bin/seakr}
R=runs/results
declare -A LINES=([hotpotqa]="--start 8 --limit 192" [2wiki]="--start 0 --limit 200")
for ds in hotpotqa 2wiki; do
  # shellcheck disable=SC2086 # the line range is words
  "$SEAKR" eval --dataset "$ds" ${LINES[$ds]} --out "$R/${ds}_dev/seakr.jsonl" -q
  for method in single-retrieval cot; do
    "$SEAKR" eval --dataset "$ds" ${LINES[$ds]} --method "$method" --out-dir "$R/${ds}_dev" -q
  done
  # SKR-kNN learns from the CoT and single-retrieval answers of lines 200-299
  for method in single-retrieval cot; do
    "$SEAKR" eval --dataset "$ds" --start 200 --limit 100 --method "$method" --out-dir "$R/skr-train/$ds" -q
  done
  "$SEAKR" eval --dataset "$ds" ${LINES[$ds]} --method skr-knn --skr-train "$R/skr-train/$ds" --out-dir "$R/${ds}_dev" -q
  # the costly ones on the lines with i % 5 == 1: the authors' rules (about ten times the default's cost), FLARE, IRCoT
  slice=$(mktemp -d)/${ds}_dev_fold1.jsonl
  lo=$([ "$ds" = hotpotqa ] && echo 8 || echo 0)
  awk -v lo="$lo" 'NR - 1 >= lo && NR - 1 <= 199 && (NR - 1) % 5 == 1' "data/${ds}_dev.jsonl" > "$slice"
  "$SEAKR" eval --dataset "$slice" --corpus "data/corpus_${ds}.jsonl" --rules paper --out "$R/${ds}_dev/seakr-paper.jsonl" -q
  for method in flare ircot; do
    "$SEAKR" eval --dataset "$slice" --corpus "data/corpus_${ds}.jsonl" --method "$method" --out "$R/${ds}_dev/$method.jsonl" -q
  done
done
.venv/bin/python bench/results_page.py
