#!/usr/bin/env bash
# Three apps as users write them, each in a fresh venv without torch, against one `seakr serve smollm2`:
#   agent_app.py       create_agent + SeaKRMiddleware; ChatOpenAI on the server answers
#   chain_app.py       an LCEL RAG chain with ChatOpenAI; UncertaintyGatedRetriever + SelfAwareReranker on base_url=
#   llamaindex_app.py  query engines with OpenAILike; SelfAwareReranker and SeaKRQueryEngine on base_url=
# Each app prints its answers and SeaKR's decisions (callback / instrumentation events) as JSON.
# The server runs from a venv with vLLM (SERVER_PYTHON, default .venv/bin/python from scripts/setup-venv.sh).  The
# apps' venvs get this checkout as a wheel plus what each app imports, from PyPI with no pip cache (a first install).
# Usage: bash bench/three_apps.sh [WORK_DIR]   (default /tmp/seakr-three-apps; its venvs are replaced)
# Results: WORK_DIR/results/ (each app's JSON, the server log, summary.txt); docs/benchmarks.md has a run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-/tmp/seakr-three-apps}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
SERVER_PYTHON=${SERVER_PYTHON:-$ROOT/.venv/bin/python}
PYTHON=${PYTHON:-python3}
RESULTS=$WORK/results
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
APPS=(agent chain llamaindex)
declare -A EXTRAS=([agent]=langchain,bm25 [chain]=langchain,bm25 [llamaindex]=llamaindex,bm25)
declare -A MORE=([agent]=langchain-openai [chain]=langchain-openai [llamaindex]=)

# pip, minus the warnings this machine's pip.conf produces for local index folders that do not exist.
pip_in() {
  local venv=$1
  shift
  "$venv/bin/python" -m pip --disable-pip-version-check "$@" 2>&1 | { grep -v "^WARNING: Location 'file:///opt/" || true; }
  return "${PIPESTATUS[0]}"
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }

# 1. The package as a user gets it: a wheel of this checkout's package files (tracked and new), built in a copy.
rm -rf "$WORK/src" "$WORK/dist" "$WORK/build-venv" && mkdir -p "$WORK/src"
(cd "$ROOT" && git ls-files -co --exclude-standard -z -- pyproject.toml README.md seakr_integrations langchain_seakr \
  llamaindex_seakr | xargs -0 tar cf -) | tar xf - -C "$WORK/src"
"$PYTHON" -m venv "$WORK/build-venv"
pip_in "$WORK/build-venv" wheel -q --no-deps "$WORK/src" -w "$WORK/dist"
WHEEL=$(ls "$WORK"/dist/seakr_integrations-*.whl)
echo "wheel: $WHEEL"

# 2. One fresh venv per app; what it costs, and that no torch (nor vLLM, transformers) came with it.
for app in "${APPS[@]}"; do
  venv=$WORK/venv-$app
  rm -rf "$venv"
  start=$(now)
  "$PYTHON" -m venv "$venv"
  # shellcheck disable=SC2086  # MORE is a word list
  PIP_NO_CACHE_DIR=1 pip_in "$venv" install -q "$WHEEL[${EXTRAS[$app]}]" ${MORE[$app]}
  install_s=$(since "$start")
  mb=$(du -sm "$venv" | cut -f1)
  if ! "$venv/bin/python" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is not None)"; then
    echo "FAILED: torch is installed in the $app venv" >&2
    exit 1
  fi
  absent=$("$venv/bin/python" -c "import importlib.util as u; print(' '.join(m for m in ('torch', 'vllm', \
'transformers') if u.find_spec(m) is None))")
  echo "$app: pip install \"seakr-integrations[${EXTRAS[$app]}]\" ${MORE[$app]}: ${install_s} s, ${mb} MB; absent: $absent" \
    | tee -a "$RESULTS/installs.txt"
done

# 3. One server for all three (no API key: it listens on 127.0.0.1 only).
PORT=$("$SERVER_PYTHON" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
URL=http://127.0.0.1:$PORT
start=$(now)
# its own session, so that stopping it stops vLLM's engine processes too; cwd outside the checkout
(cd "$WORK" && exec setsid "$SERVER_PYTHON" -m seakr_integrations.cli serve smollm2 --port "$PORT" --seed 0) \
  >"$RESULTS/server.log" 2>&1 &
SERVER=$!
stop_server() {
  kill -TERM -- "-$SERVER" 2>/dev/null || true
  for _ in $(seq 30); do kill -0 "$SERVER" 2>/dev/null || return 0; sleep 1; done
  kill -KILL -- "-$SERVER" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 143' TERM INT
until curl -sf "$URL/health" >/dev/null; do
  if ! kill -0 "$SERVER" 2>/dev/null; then
    echo "FAILED: seakr serve exited; the end of its log:" >&2
    tail -30 "$RESULTS/server.log" >&2
    exit 1
  fi
  if (($(since "$start") > 600)); then
    echo "FAILED: seakr serve did not answer within 600 s" >&2
    exit 1
  fi
  sleep 2
done
echo "seakr serve smollm2 at $URL: ready in $(since "$start") s" | tee "$RESULTS/summary.txt"

# 4. The apps, one after the other, from outside the checkout (they import the installed wheel).
status=0
for app in "${APPS[@]}"; do
  start=$(now)
  if (cd "$WORK" && "$WORK/venv-$app/bin/python" "$ROOT/bench/three_apps/${app}_app.py" "$URL") \
    >"$RESULTS/$app.json" 2>"$RESULTS/$app.err"; then
    echo "$app app: answered in $(since "$start") s" | tee -a "$RESULTS/summary.txt"
  else
    echo "$app app: FAILED after $(since "$start") s (see $RESULTS/$app.err)" | tee -a "$RESULTS/summary.txt"
    tail -20 "$RESULTS/$app.err"
    status=1
  fi
  cat "$RESULTS/$app.json"
done
cat "$RESULTS/installs.txt" >>"$RESULTS/summary.txt"
exit $status
