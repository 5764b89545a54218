#!/usr/bin/env bash
# Set up a fresh venv (scripts/setup-venv.sh) and run the whole test suite in it.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"` for the quick subset.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh .venv
.venv/bin/python -m pytest "$@"
