#!/usr/bin/env bash
# SeaKR against the baselines on 40 questions per dataset (docs/results_40q.md): lines 20-39 added to the
# 20-question runs of bench/eval_real.sh, with the same model, settings, profiles and SKR training labels.
# Each command resumes its results files, so it skips lines 0-19 and answers 20-39 only.  The last command
# extends the Table 3 ablations (always retrieve, no re-ranking, both).  The estimator variants stay at 20
# questions (docs/results.md): extending them costs about 1 CPU-hour per method.
#
# The commands differ from eval_real.sh's only in grouping (ircot and flare alone), which changes the seconds a
# method shares through the LM-call cache, not its answers.  Run on the 2-core CPU machine, niced, 2026-11-23.
#
#   bash bench/eval_40q.sh
set -euo pipefail
cd "$(dirname "$0")/.."
S=${SEAKR:-.venv/bin/seakr}
N=${N:-40}
# --no-chat-answer-prefix: these runs predate the chat prompt that opens the assistant turn with "Answer:".
M=(--model qwen --backend vllm --dtype float32 -k 10 --max-tokens 64 --no-chat-answer-prefix)
q() { echo --dataset "../shared/data/$1_dev.jsonl" --corpus "../shared/data/corpus_$1.jsonl"; }
for ds in hotpotqa 2wiki; do
  # shellcheck disable=SC2046  # q prints options, split on purpose
  $S eval $(q $ds) --start 0 --limit "$N" "${M[@]}" --out-dir "runs/${ds}_dev" --calibrated --profile-dir "runs/profiles/$ds" \
    --method seakr --method seakr-rationales-only --method seakr-knowledge-only
done
for ds in hotpotqa 2wiki; do
  # shellcheck disable=SC2046
  $S eval $(q $ds) --start 0 --limit "$N" "${M[@]}" --out-dir "runs/${ds}_dev" --method closed-book --method cot --method single-retrieval
  # shellcheck disable=SC2046
  $S eval $(q $ds) --start 0 --limit "$N" "${M[@]}" --out-dir "runs/${ds}_dev" --method skr-knn --skr-train "runs/train/$ds"
done
for method in ircot flare; do
  for ds in 2wiki hotpotqa; do
    # shellcheck disable=SC2046
    $S eval $(q $ds) --start 0 --limit "$N" "${M[@]}" --out-dir "runs/${ds}_dev" --method $method
  done
done
bash bench/eval_real.sh "$N" ablations
