#!/usr/bin/env bash
# The real evaluation behind docs/results.md: Qwen2.5-Coder-0.5B-Instruct on vLLM (CPU), the shared HotpotQA and
# 2WikiMultihopQA dev subsets with their passage corpora, k = 10 samples (the issue allows 10 on a CPU).
#
# Lines of each question file (0-based):   0 .. N-1   evaluated
#                                        100 .. 199   SKR-kNN training labels (cot and single-retrieval; SKR_TRAIN=100)
#                                        200 .. 219   delta calibration (never evaluated)
#                                        290 .. 299   the bundled demo questions (not used here)
# OUT (default runs) holds the results (OUT/DATASET_dev/METHOD.jsonl) and the profiles (OUT/profiles/DATASET);
# EXTRA adds options to every command, e.g. OUT=runs/plain EXTRA=--no-chat-template for plain completion prompts;
# DATASETS (default "hotpotqa 2wiki") picks the datasets.  The first runs, before min_tokens existed (docs/
# results_min0.md), are extended with OUT=runs/min0 EXTRA="--min-tokens 0" (and OUT=runs/min0/plain
# EXTRA="--min-tokens 0 --no-chat-template").
#
# The runs under runs/ were made before the chat prompt opened the assistant turn with "Answer:" (see
# seakr_integrations/reasoning/prompts.py): LEGACY_PROMPT=1, the default here, passes --no-chat-answer-prefix so
# that they resume and reproduce.  LEGACY_PROMPT=0 uses the current prompts; give those runs their own OUT.
#
# Every step resumes: results files skip the questions already answered, and a calibration whose profiles exist
# is not redone.  Rerun the script with a larger N to extend the run.
#
# The estimators' AUROC uses closed-book answers to the first NQ (default 100) lines of nq_open_dev.jsonl and of
# hotpotqa_dev.jsonl (step auroc; it extends the closed-book results file of the baselines step).
#
# Step sweep calibrates delta for F1 instead (SWEEP_Q, default 10, of lines 200.. at SWEEP_POINTS, default 4,
# quantile thresholds plus always and never) into SWEEP_OUT/DATASET (default OUT/profiles-f1): the delta sweep
# plot of the report.  2Wiki's was run again on all 20 calibration lines: SWEEP_Q=20 SWEEP_OUT=runs/profiles-f1-20q.
#
#   bash bench/eval_real.sh [N=20] [STEP...]      STEP: baselines calibrate seakr ablations auroc estimators skr sweep
#                                                 (default: all but sweep, in this order, each over both datasets)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
shift || true
STEPS=${*:-baselines calibrate seakr ablations auroc estimators skr}
NQ=${NQ:-100}
SEAKR=${SEAKR:-.venv/bin/seakr}
DATA=${DATA:-../shared/data}
OUT=${OUT:-runs}
# shellcheck disable=SC2206  # EXTRA is a list of options, split on purpose
LEGACY=()
[ "${LEGACY_PROMPT:-1}" = 1 ] && LEGACY=(--no-chat-answer-prefix)
MODEL=(--model qwen --backend vllm --dtype float32 -k 10 --max-tokens 64 "${LEGACY[@]}" ${EXTRA:-})

for step in $STEPS; do
  for ds in ${DATASETS:-hotpotqa 2wiki}; do
    questions=(--dataset "$DATA/${ds}_dev.jsonl" --corpus "$DATA/corpus_${ds}.jsonl")
    profiles=$OUT/profiles/$ds
    results=(--out-dir "$OUT/${ds}_dev")
    case $step in
      baselines)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" "${results[@]}" \
          --method closed-book --method cot --method single-retrieval --method ircot --method flare ;;
      calibrate)
        if ! ls "$profiles"/*.json >/dev/null 2>&1; then
          $SEAKR calibrate "${questions[@]}" --start 200 --limit 20 "${MODEL[@]}" \
            --objective rate --target-rate 0.5 --all-estimators --profile-dir "$profiles"
        elif ! ls "$profiles"/*__energy__*.json >/dev/null 2>&1; then  # profiles from before vLLM gave energy
          $SEAKR calibrate "${questions[@]}" --start 200 --limit 20 "${MODEL[@]}" \
            --objective rate --target-rate 0.5 --estimator energy --profile-dir "$profiles"
        fi ;;
      seakr)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" "${results[@]}" --calibrated --profile-dir "$profiles" \
          --method seakr --method seakr-rationales-only --method seakr-knowledge-only ;;
      auroc)
        if [ "$ds" = hotpotqa ]; then  # NQ-open: closed-book only, so no corpus (the bundled index is never searched)
          $SEAKR eval --dataset "$DATA/nq_open_dev.jsonl" --no-coverage-check --start 0 --limit "$NQ" "${MODEL[@]}" \
            --out-dir "$OUT/nq_open_dev" --method closed-book
          $SEAKR eval "${questions[@]}" --start 0 --limit "$NQ" "${MODEL[@]}" "${results[@]}" --method closed-book
        fi ;;
      ablations)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" "${results[@]}" --calibrated --profile-dir "$profiles" \
          --method seakr --method seakr-always-retrieve --method seakr-no-rerank --method seakr-always-retrieve-no-rerank ;;
      estimators)
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" "${results[@]}" --calibrated --profile-dir "$profiles" \
          --method seakr-perplexity --method seakr-ln-entropy --method seakr-multi-perplexity --method seakr-prompt \
          --method seakr-energy ;;
      skr)
        $SEAKR eval "${questions[@]}" --start 100 --limit "${SKR_TRAIN:-100}" "${MODEL[@]}" --method cot --method single-retrieval \
          --out-dir "$OUT/train/$ds"
        $SEAKR eval "${questions[@]}" --start 0 --limit "$N" "${MODEL[@]}" "${results[@]}" --method skr-knn \
          --skr-train "$OUT/train/$ds" ;;
      sweep)
        sweeps=${SWEEP_OUT:-$OUT/profiles-f1}/$ds
        if ! ls "$sweeps"/*.json >/dev/null 2>&1; then
          $SEAKR calibrate "${questions[@]}" --start 200 --limit "${SWEEP_Q:-10}" "${MODEL[@]}" \
            --objective f1 --points "${SWEEP_POINTS:-4}" --profile-dir "$sweeps"
        fi ;;
      *) echo "unknown step $step (baselines calibrate seakr ablations auroc estimators skr sweep)" >&2; exit 2 ;;
    esac
  done
done
