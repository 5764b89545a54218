#!/usr/bin/env bash
# SeaKR against the baselines with the current prompts (docs/results_answer_prefix.md): in the chat template,
# "Answer:" opens the assistant turn (SeaKRConfig.chat_answer_prefix, the default since 2026-11-23) and each
# dataset has its own exemplars (--style hotpotqa, --style 2wiki).  Same model, settings and line split as
# bench/eval_real.sh: lines 0..N-1 evaluated, SKR-kNN labels from lines 100-199, delta calibrated on lines 200-219
# (EigenScore, first-step retrieval rate 0.5) into runs/answer-prefix/profiles/DATASET.
#
# SeaKR, single retrieval and CoT run in one command with --calibrated (their headers record the calibrated delta,
# which the two baselines do not read); closed-book, IRCoT and FLARE without it.  Every command resumes its results
# files, so a larger N extends the runs.  seakr-rationales-only and seakr-knowledge-only are not run: SeaKR's trace
# holds both final answers, which the report scores (a rerun of rationales-only gave the trace's answer on 8 of 8
# HotpotQA questions).  The committed ablation files were run seakr-no-rerank alone, then seakr-always-retrieve with
# seakr-always-retrieve-no-rerank (same options): grouping changes the seconds a method shares through the LM-call
# cache, not its answers.  The first SeaKR, single-retrieval and CoT files were made with a patched prompts.py that gives
# the same prompt text (docs/results_prompt_notes.md).  Run on the 2-core CPU machine, niced, 2026-11-22 to 11-24:
# N=100 for seakr, baselines and skr on both datasets; N=20 for the ablations.  The 11-24 runs resumed method by
# method (HotpotQA: single-retrieval, seakr, cot, skr, then seakr alone and the three baselines together), same options.
# The estimators step ran with N=20 on 2Wiki, then on HotpotQA (its two commands by hand, 2Wiki first; the 2Wiki
# eval was stopped after prompt's line 7 on 11-24 and resumed on 11-24 with the same options).  Then seakr-energy
# alone on HotpotQA with N=40 (same options; lines 20-39), then on 2Wiki with N=40, then on 11-24/25 on HotpotQA
# and then 2Wiki with N=100 (lines 40-99).  On 11-25 seakr-no-rerank alone (the ablations step's options) on HotpotQA
# with N=40 (lines 20-39), then seakr-always-retrieve alone on 2Wiki with N=40 (lines 20-39).  On 11-25, each
# method alone with the ablations step's options: seakr-no-rerank on HotpotQA with N=100 (lines 40-99), then
# seakr-always-retrieve on HotpotQA with N=40, on 2Wiki with N=60, on HotpotQA with N=60, on 2Wiki with N=100, and
# on HotpotQA with N=80, then N=100; then seakr-no-rerank on 2Wiki with N=40 (lines 20-39), and on 11-25 with
# N=100 (lines 40-99); then seakr-always-retrieve-no-rerank alone on 2Wiki, then on HotpotQA, with N=100 (lines
# 20-99).  Then the estimators step's 2Wiki eval (not energy) with N=40 (lines 20-39), then HotpotQA's with N=40,
# stopped once seakr-perplexity had lines 20-39 (before seakr-ln-entropy's first batch); then seakr-ln-entropy with
# seakr-multi-perplexity on HotpotQA with N=40 (same options).  Then, in one queue on 11-25, the estimators step's
# HotpotQA eval (not energy) with N=40 (seakr-prompt lines 20-39), 2Wiki's with N=100 (lines 40-99) and HotpotQA's
# with N=70 (lines 40-69); then seakr-perplexity alone on HotpotQA with N=100 (same options; lines 70-99).  Then,
# on 11-25, HotpotQA's seakr-ln-entropy, seakr-multi-perplexity and seakr-prompt in one command with N=100 (same
# options; lines 70-99).
#
#   N=20 bash bench/eval_answer_prefix.sh [STEP...]   STEP: calibrate seakr baselines skr ablations estimators
#                                                     (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
S=${SEAKR:-.venv/bin/seakr}
N=${N:-20}
OUT=runs/answer-prefix
STEPS=${*:-calibrate seakr baselines skr ablations estimators}
M=(--model qwen --backend vllm --dtype float32 -k 10 --max-tokens 64)
for step in $STEPS; do
  for ds in hotpotqa 2wiki; do
    q=(--dataset "../shared/data/${ds}_dev.jsonl" --corpus "../shared/data/corpus_${ds}.jsonl" --style "$ds")
    profiles=(--calibrated --profile-dir "$OUT/profiles/$ds")
    case $step in
      calibrate)
        ls "$OUT/profiles/$ds"/*__eigenscore__k10.json >/dev/null 2>&1 ||
          $S calibrate "${q[@]}" --start 200 --limit 20 "${M[@]}" --objective rate --target-rate 0.5 \
            --profile-dir "$OUT/profiles/$ds" ;;
      seakr)
        $S eval "${q[@]}" --start 0 --limit "$N" "${M[@]}" --out-dir "$OUT/${ds}_dev" "${profiles[@]}" \
          --method seakr --method single-retrieval --method cot ;;
      baselines)
        $S eval "${q[@]}" --start 0 --limit "$N" "${M[@]}" --out-dir "$OUT/${ds}_dev" \
          --method closed-book --method ircot --method flare ;;
      skr)
        $S eval "${q[@]}" --start 100 --limit 100 "${M[@]}" --out-dir "$OUT/train/$ds" --method cot --method single-retrieval
        $S eval "${q[@]}" --start 0 --limit "$N" "${M[@]}" --out-dir "$OUT/${ds}_dev" --method skr-knn --skr-train "$OUT/train/$ds" ;;
      ablations)
        $S eval "${q[@]}" --start 0 --limit "$N" "${M[@]}" --out-dir "$OUT/${ds}_dev" "${profiles[@]}" \
          --method seakr-always-retrieve --method seakr-no-rerank --method seakr-always-retrieve-no-rerank ;;
      estimators)  # every estimator's delta from one calibration (EigenScore's matches the calibrate step's)
        est=$OUT/profiles-estimators/$ds
        ls "$est"/*__perplexity__k10.json >/dev/null 2>&1 ||
          $S calibrate "${q[@]}" --start 200 --limit 20 "${M[@]}" --objective rate --target-rate 0.5 \
            --all-estimators --profile-dir "$est"
        $S eval "${q[@]}" --start 0 --limit "$N" "${M[@]}" --out-dir "$OUT/${ds}_dev" --calibrated --profile-dir "$est" \
          --method seakr-perplexity --method seakr-ln-entropy --method seakr-multi-perplexity --method seakr-prompt \
          --method seakr-energy ;;
      *) echo "unknown step $step (calibrate seakr baselines skr ablations estimators)" >&2; exit 2 ;;
    esac
  done
done
