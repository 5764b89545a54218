#!/usr/bin/env bash
# The runs behind docs/results.md (docs/evaluation_protocol.md): the shipped default exactly as `seakr eval` runs it,
# SeaKRConfig.paper() on a slice, and the baselines, on lines 8-199 of HotpotQA and 0-199 of 2Wiki (the lines the
# shipped profiles were not calibrated on), 8 questions in progress; then the page itself. Every row gives its
# answer through the same answer step (the default rules' `answer-with-option`; `paper()` gets it added), so a lead
# measures retrieval and reasoning. Resumable: rerun to go on; a finished run is kept gzipped (METHOD.jsonl.gz)
# and skipped. About 4 hours on 2 CPU cores; the runs go one after another, never together.
#
#   bash experiments/results.sh            # writes runs/results/DATASET_dev/METHOD.jsonl.gz, then docs/results.md
set -euo pipefail
cd "$(dirname "$0")/.."
SEAKR=${SEAKR:-.venv/bin/seakr}
R=runs/results

# run OUT [seakr eval arguments]: one resumable run into OUT, gzipped when it ends; skipped when OUT.gz exists.
run() {
  local out=$1
  shift
  [ -e "$out.gz" ] && return 0
  "$SEAKR" eval "$@" --out "$out" -q
  gzip -9 "$out"
}

declare -A LINES=([hotpotqa]="--start 8 --limit 192" [2wiki]="--start 0 --limit 200")
for ds in hotpotqa 2wiki; do
  # shellcheck disable=SC2086 # the line range is words
  run "$R/${ds}_dev/seakr.jsonl" --dataset "$ds" ${LINES[$ds]}
  for method in single-retrieval cot; do
    # shellcheck disable=SC2086
    run "$R/${ds}_dev/$method.jsonl" --dataset "$ds" ${LINES[$ds]} --method "$method"
    # SKR-kNN and the token gate learn from the CoT and single-retrieval answers of lines 200-299
    run "$R/train/$ds/$method.jsonl" --dataset "$ds" --start 200 --limit 100 --method "$method"
  done
  for method in skr-knn token-gate; do
    # shellcheck disable=SC2086
    run "$R/${ds}_dev/$method.jsonl" --dataset "$ds" ${LINES[$ds]} --method "$method" --train-results "$R/train/$ds"
  done
done
# the costly ones, after every dataset's others: on the lines with i % 5 == 1, FLARE, IRCoT and the authors' rules
# (about ten times the default's cost)
for ds in hotpotqa 2wiki; do
  slice=$(mktemp -d)/${ds}_dev_fold1.jsonl
  lo=$([ "$ds" = hotpotqa ] && echo 8 || echo 0)
  awk -v lo="$lo" 'NR - 1 >= lo && NR - 1 <= 199 && (NR - 1) % 5 == 1' "data/${ds}_dev.jsonl" > "$slice"
  for method in flare ircot; do
    run "$R/${ds}_dev/$method.jsonl" --dataset "$slice" --corpus "data/corpus_${ds}.jsonl" --style "$ds" --method "$method"
  done
  run "$R/${ds}_dev/seakr-paper.jsonl" --dataset "$slice" --corpus "data/corpus_${ds}.jsonl" --style "$ds" \
    --rules paper,answer-with-option
done
.venv/bin/python experiments/results_page.py
