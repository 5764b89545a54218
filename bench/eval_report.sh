#!/usr/bin/env bash
# The evaluation behind docs/results.md: SeaKR, its ablations and estimators, and the baselines, on the shared
# HotpotQA and 2Wiki questions, with Qwen2.5-Coder-0.5B-Instruct on vLLM (CPU, fp32), k=10, 64 tokens, the current
# prompts ("Answer:" opens the assistant turn; each dataset has its own exemplars, --style).
#
# Line split of each dataset file: lines 0..N-1 are evaluated; SKR-kNN learns from lines 100-199; delta is
# calibrated on lines 200-219 (first-step retrieval rate 0.5) into runs/answer-prefix/profiles/DATASET (EigenScore)
# and runs/answer-prefix/profiles-estimators/DATASET (every estimator from one calibration).  Every command resumes
# its results files, so a larger N extends the runs.  How the committed files were made, run by run, is in the
# report (docs/results.md, "How the files were made").
#
#   N=100 bash bench/eval_report.sh [STEP...]   STEP: calibrate seakr baselines skr ablations estimators (default: all)
#   bash bench/eval_report.sh calibrate confirm  the confirmation run on lines 220-299 (runs/confirmation/): the default
#                                                SeaKR, seakr-paper and the baselines, in one command per dataset (the
#                                                default of its day, the rules chosen on lines 0-99, is in
#                                                seakr-rules-0-99.jsonl; this step writes today's to seakr.jsonl)
#   bash bench/eval_report.sh cv-baselines       FLARE and IRCoT on lines 100-219 (runs/cv/), the lines the steps
#                                                above left out, so that every baseline covers the cross-validation's
#                                                questions; DATASETS="2wiki hotpotqa" picks the datasets and their order
#   python -m experiments.report runs/answer-prefix --out docs/results.md --commands bench/eval_report.sh \
#     --notes docs/results_notes.md --profiles runs/answer-prefix/profiles/*/*.json \
#     --confirmation runs/confirmation --confirmation-notes docs/confirmation_notes.md \
#     --title "SeaKR against the baselines: Qwen2.5-Coder-0.5B-Instruct on CPU"
#                                                the report, from the repository's root (experiments/ is the project's
#                                                report code, not part of the package; `seakr report DIR` prints the
#                                                method tables alone)
set -euo pipefail
cd "$(dirname "$0")/.."
S=${SEAKR:-.venv/bin/seakr}
N=${N:-20}
OUT=runs/answer-prefix
STEPS=${*:-calibrate seakr baselines skr ablations estimators}
M=(--model qwen --backend vllm --dtype float32 -k 10 --max-tokens 64)
for step in $STEPS; do
  for ds in ${DATASETS:-hotpotqa 2wiki}; do
    q=(--dataset "data/${ds}_dev.jsonl" --corpus "data/corpus_${ds}.jsonl" --style "$ds")
    profiles=(--calibrated --profile-dir "$OUT/profiles/$ds")
    case $step in
      calibrate)
        ls "$OUT/profiles/$ds"/*__eigenscore__k10.json >/dev/null 2>&1 ||
          $S calibrate "${q[@]}" --start 200 --limit 20 "${M[@]}" --objective rate --target-rate 0.5 \
            --profile-dir "$OUT/profiles/$ds" ;;
      seakr)  # writes seakr.jsonl, today's default; seakr-paper.jsonl holds the authors' rules, the default when
              # it was made (its header says method seakr), and is not extended by this step
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
      confirm)  # the confirmation of docs/decision_rules.md: lines 220-299, never used for any choice
        $S eval "${q[@]}" --start 220 --limit 80 "${M[@]}" --out-dir "runs/confirmation/${ds}_dev" "${profiles[@]}" \
          --method seakr --method seakr-paper --method single-retrieval --method cot --method flare --method ircot ;;
      cv-baselines)
        $S eval "${q[@]}" --start 100 --limit 120 "${M[@]}" --out-dir "runs/cv/${ds}_dev" --method flare --method ircot ;;
      *) echo "unknown step $step (calibrate seakr baselines skr ablations estimators confirm cv-baselines)" >&2; exit 2 ;;
    esac
  done
done
