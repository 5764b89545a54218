#!/usr/bin/env bash
# The real evaluation behind docs/results.md: Qwen2.5-Coder-0.5B-Instruct on vLLM (CPU), the shared HotpotQA and
# 2WikiMultihopQA dev subsets with their passage corpora, k = 10 samples (the issue allows 10 on a CPU).
#
# Lines of each question file (0-based):   0 .. N-1   evaluated
#                                        100 .. 129   SKR-kNN training labels (cot and single-retrieval)
#                                        200 .. 219   delta calibration (never evaluated)
#                                        290 .. 299   the bundled demo questions (not used here)
# Every step resumes: results files skip the questions already answered, and a calibration whose profiles exist
# is not redone.  Rerun the script with a larger N to extend the run.
#
# The estimators' AUROC also uses the closed-book answers to the first NQ lines of nq_open_dev.jsonl (step auroc).
#
#   bash bench/eval_real.sh [N=20] [STEP...]      STEP: baselines calibrate seakr auroc ablations estimators skr
#                                                 (default: all, in this order, each over both datasets)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
shift || true
STEPS=${*:-baselines calibrate seakr auroc ablations estimators skr}
NQ=${NQ:-100}
SEAKR=${SEAKR:-.venv/bin/seakr}
DATA=${DATA:-../shared/data}
MODEL=(--model qwen --backend vllm --dtype float32 -k 10 --max-tokens 64)

for step in $STEPS; do
  for ds in hotpotqa 2wiki; do
    questions=(--dataset "$DATA/${ds}_dev.jsonl" --corpus "$DATA/corpus_${ds}.jsonl")
    profiles=runs/profiles/$ds
    case $step in
      baselines)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" \
          --method closed-book --method cot --method single-retrieval --method ircot --method flare ;;
      calibrate)
        if ! ls "$profiles"/*.json >/dev/null 2>&1; then
          $SEAKR calibrate "${questions[@]}" --start 200 --limit 20 "${MODEL[@]}" \
            --objective rate --target-rate 0.5 --all-estimators --profile-dir "$profiles"
        fi ;;
      seakr)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" --calibrated --profile-dir "$profiles" \
          --method seakr --method seakr-rationales-only --method seakr-knowledge-only ;;
      auroc)
        if [ "$ds" = hotpotqa ]; then  # NQ-open: closed-book only, so no corpus (the bundled index is never searched)
          $SEAKR eval --dataset "$DATA/nq_open_dev.jsonl" --no-coverage-check --start 0 --limit "$NQ" "${MODEL[@]}" \
            --method closed-book
        fi ;;
      ablations)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" --calibrated --profile-dir "$profiles" \
          --method seakr --method seakr-no-rerank --method seakr-always-retrieve ;;
      estimators)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" --calibrated --profile-dir "$profiles" \
          --method seakr-perplexity --method seakr-ln-entropy --method seakr-multi-perplexity --method seakr-prompt ;;
      skr)
        $SEAKR eval "${questions[@]}" --start 100 --limit 30 "${MODEL[@]}" --method cot --method single-retrieval \
          --out-dir "runs/train/$ds"
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" --method skr-knn \
          --skr-train "runs/train/$ds" ;;
      *) echo "unknown step $step (baselines calibrate seakr auroc ablations estimators skr)" >&2; exit 2 ;;
    esac
  done
done
