#!/usr/bin/env bash
# Make the calibration profiles shipped in seakr_integrations/data/calibration/: one per bundled model, prompt style
# and preset (SeaKRConfig() and SeaKRConfig.light()), each chosen by `seakr calibrate` at a first-step retrieval
# rate of 0.5 on lines 200-299 of the style's question file (100 questions; 20 gave a noisy median), with the cascade
# band for the default cascade estimator stored beside delta.
#
#   bash experiments/ship_profiles.sh [MODEL ...]     # default: smollm2 qwen
#   STYLES="hotpotqa" bash experiments/ship_profiles.sh qwen     # only the named prompt styles (default: all three)
#
# SmolLM2 runs on Hugging Face (the CLI's default back-end), Qwen on vLLM in float32 (the evaluation's back-end).
# Each calibration takes the heavy-job lock /tmp/seakr-heavy.lock so that it never shares the CPU with a test run.
set -euo pipefail
cd "$(dirname "$0")/.."
SEAKR=${SEAKR:-.venv/bin/seakr}
DATA=${DATA:-data}
OUT=seakr_integrations/data/calibration
mkdir -p "$OUT"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(smollm2 qwen)

# style | question file | mode
styles=(
  "hotpotqa|$DATA/hotpotqa_dev.jsonl|multi_hop"
  "2wiki|$DATA/2wiki_dev.jsonl|multi_hop"
  "simple|$DATA/nq_open_dev.jsonl|single_hop"
)
# preset | the settings it changes (SeaKRConfig.light(): k=10, max_tokens=32, num_exemplars=4)
presets=(
  "default|"
  "light|-k 10 --max-tokens 32 --exemplars 4"
)

wanted=${STYLES:-hotpotqa 2wiki simple}

for model in "${models[@]}"; do
  case "$model" in
    qwen*) backend=(--backend vllm --dtype float32) ;;
    *) backend=(--backend hf) ;;
  esac
  for s in "${styles[@]}"; do
    IFS='|' read -r style file mode <<<"$s"
    [[ " $wanted " == *" $style "* ]] || continue
    for p in "${presets[@]}"; do
      IFS='|' read -r preset settings <<<"$p"
      tmp=$(mktemp -d)
      # shellcheck disable=SC2086 # settings are words
      flock /tmp/seakr-heavy.lock nice -n 5 "$SEAKR" calibrate --dataset "$file" --start 200 --limit 100 \
        --no-coverage-check --objective rate --target-rate 0.5 --model "$model" "${backend[@]}" \
        --mode "$mode" --style "$style" $settings --profile-dir "$tmp" --quiet
      for f in "$tmp"/*.json; do
        exemplars=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prompt"]["num_exemplars"])' "$f")
        mv "$f" "$OUT/$(basename "$f" .json)__${style}-${exemplars}ex.json"
      done
      rmdir "$tmp"
    done
  done
done
ls -l "$OUT"
