#!/usr/bin/env bash
# Set up a fresh venv (scripts/setup-venv.sh) and run the whole test suite in it.
# nginx (for the replica tests) comes from apt-get when it is missing and this runs as root.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"` for the quick subset.
#
# The Elasticsearch tests run against the cluster at $ELASTICSEARCH_URL (credentials from ELASTICSEARCH_API_KEY or
# ELASTICSEARCH_USERNAME/ELASTICSEARCH_PASSWORD).  Without it, the noida-db emulator (dev extra) is started on
# 127.0.0.1 on a free port for the run, and SEAKR_ES_EMULATOR tells the tests they talk to an emulator; it is
# stopped on exit, whatever the outcome.  The exit status is pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh .venv

es_pid=""
es_dir=""
stop_emulator() {
  if [ -n "$es_pid" ]; then
    kill "$es_pid" 2>/dev/null || true
    wait "$es_pid" 2>/dev/null || true
  fi
  if [ -n "$es_dir" ]; then rm -rf "$es_dir"; fi
}
trap stop_emulator EXIT

if [ -n "${ELASTICSEARCH_URL:-}" ]; then
  echo "Elasticsearch tests: the cluster at ELASTICSEARCH_URL"
elif .venv/bin/python tests/es_server.py available; then
  es_dir="$(mktemp -d "${TMPDIR:-/tmp}/seakr-es-emulator.XXXXXX")"
  .venv/bin/python tests/es_server.py serve "$es_dir" >"$es_dir/url" 2>"$es_dir/serve.log" &
  es_pid=$!
  for _ in $(seq 300); do  # up to 30 s; the helper prints the URL once the emulator answers
    if [ -s "$es_dir/url" ] || ! kill -0 "$es_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if [ -s "$es_dir/url" ]; then
    ELASTICSEARCH_URL="$(head -n 1 "$es_dir/url")"
    SEAKR_ES_EMULATOR="noida-db $(.venv/bin/python -c 'from importlib.metadata import version; print(version("noida-db"))')"
    export ELASTICSEARCH_URL SEAKR_ES_EMULATOR
    echo "Elasticsearch tests: the $SEAKR_ES_EMULATOR EMULATOR (not a real cluster) at $ELASTICSEARCH_URL"
  else
    echo "Elasticsearch tests: the noida-db emulator did not start; they will skip. Its log:" >&2
    cat "$es_dir/serve.log" "$es_dir"/noida-db.log 2>/dev/null >&2 || true
  fi
else
  echo "Elasticsearch tests: no ELASTICSEARCH_URL and no noida-db emulator; they will skip"
fi

# The replica tests run nginx from Debian's package (tests/test_serving_replicas.py); without it they skip and say so.
if ! command -v nginx >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "nginx for the replica tests: apt-get install nginx-light"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1; }; } ||
    echo "nginx could not be installed; the replica tests will skip" >&2
fi

.venv/bin/python -m pytest "$@"
