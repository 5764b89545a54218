#!/usr/bin/env bash
# Execute the notebooks top to bottom in a fresh kernel each and store them WITH their outputs, so that a reader on
# GitHub sees the answers, the tables and the plots.  Run it after any change that alters what a notebook shows;
# tests/test_notebooks.py checks the stored outputs (complete, in order, no error or warning, small).
#
# Usage: bash scripts/execute-notebooks.sh [notebooks/NAME.ipynb ...]   (default: every notebooks/*.ipynb)
# The Python is $PYTHON, else .venv/bin/python; it needs the notebooks extra: pip install -e '.[notebooks]'.
# A notebook whose cell fails is left as it was (the error names the cell) and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
if [ ! -x "$python" ] && ! command -v "$python" >/dev/null; then
  echo "no Python at $python: build the venv (bash scripts/setup-venv.sh) or set PYTHON" >&2
  exit 2
fi
if [ "$#" -eq 0 ]; then
  set -- notebooks/*.ipynb
fi

# Progress bars and library chatter belong on a terminal, not in a stored output.
export HF_HUB_DISABLE_PROGRESS_BARS=1 TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
# tqdm.auto warns in a kernel without ipywidgets: harmless, and no part of what the notebooks show.
export PYTHONWARNINGS="ignore:IProgress not found"

"$python" - "$@" <<'PY'
"""Execute each notebook given in a fresh python3 kernel and write it back with its outputs and clean metadata."""

import sys
import time
from pathlib import Path

import nbclient
import nbformat

for name in sys.argv[1:]:
    path = Path(name)
    if path.suffix != ".ipynb" or not path.is_file():
        sys.exit(f"{name}: not a notebook file; pass paths such as notebooks/01_langchain_quickstart.ipynb")
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # a cell's stale outputs must never survive into the stored file
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = nbclient.NotebookClient(
        nb, timeout=1200, kernel_name="python3", record_timing=False, resources={"metadata": {"path": str(path.parent)}}
    )
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError (the cell and its traceback) on the first failing cell
    seconds = time.perf_counter() - start
    # Keep the metadata that does not depend on the machine that ran it: the kernel and the language's name.
    nb.metadata = nbformat.from_dict(
        {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "pygments_lexer": "ipython3"},
        }
    )
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    print(f"{path}: executed in {seconds:.0f} s, {path.stat().st_size / 1024:.0f} KiB stored")
PY
