#!/usr/bin/env bash
# The GPU check rehearsed on the CPU (`make gpu-rehearsal`): an environment with the lent GPU
# machine's transformers 5.17.0, accelerate 1.15.0 and tokenizers 0.23.2 (and this machine's CPU
# torch 2.13.0, where the GPU machine has torch 2.11.0 with CUDA), every other package installed
# offline (`--no-index`) from wheels downloaded here first, craft from this tree as on the GPU
# machine; then the tests that need those versions, and benchmarks/gpu_check.sh --rehearsal: the
# GPU check's pipeline (install check, compile, run, figures) at the smoke profile's size.
#
#   bash benchmarks/gpu_rehearsal.sh [OUT_DIR]      # default build/gpu_rehearsal/out
#
# Environment: .venv-gpu-rehearsal; wheels: .gpu-wheels/cp311 (the GPU machine's set, for this
# Python) and .gpu-wheels/rehearsal-cp311 (what the GPU machine's image has); both ignored by git.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${1:-build/gpu_rehearsal/out}"
VENV=.venv-gpu-rehearsal
PYV="$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
MISSING=".gpu-wheels/cp${PYV/./}"
IMAGE=".gpu-wheels/rehearsal-cp${PYV/./}"
# The image's versions where the device page gives them; peft at pyproject's tested version.
IMAGE_PINNED=(transformers==5.17.0 accelerate==1.15.0 tokenizers==0.23.2 peft==0.21.2)
IMAGE_OTHERS=(pandas pyarrow tensorboard rich jinja2 pyyaml safetensors psutil matplotlib huggingface_hub numpy
              packaging xxhash fsspec tqdm filelock regex pytest pytest-xdist hypothesis)
quiet() { grep -v "^WARNING: Location" || true; }

echo "== wheels (downloaded here; the installs below are offline)"
PY_VERSION="$PYV" bash benchmarks/gpu_wheelhouse.sh "$MISSING" | tail -1
mkdir -p "$IMAGE"
# transformers, tokenizers and the rest with what they need; accelerate and peft without, since
# both ask for torch and pip would fetch a CUDA build of it.
python3 -m pip download --quiet --only-binary=:all: -d "$IMAGE" transformers==5.17.0 tokenizers==0.23.2 \
  "${IMAGE_OTHERS[@]}" 2>&1 | quiet
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$IMAGE" accelerate==1.15.0 peft==0.21.2 2>&1 | quiet

echo "== $VENV"
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
# The CPU build of torch that this machine keeps on disk (an exact pin: never a CUDA build).
"$VENV/bin/pip" install --quiet torch==2.13.0 2>&1 | quiet
"$VENV/bin/pip" install --quiet --no-index --find-links "$MISSING" --find-links "$IMAGE" \
  "${IMAGE_PINNED[@]}" "${IMAGE_OTHERS[@]}" trl==1.16.0 datasets==5.2.0 duckdb==2.0.1 sqlglot==30.31.0 lark==1.2.2 \
  pydantic==2.14.4 2>&1 | quiet
"$VENV/bin/python" -c 'import transformers, accelerate, tokenizers, trl, torch, lark
print(f"transformers {transformers.__version__}, accelerate {accelerate.__version__}, tokenizers {tokenizers.__version__}, "
      f"trl {trl.__version__}, torch {torch.__version__}, lark {lark.__version__}")'

echo "== tests that need these versions (trl_config.json -> SFTConfig/GRPOConfig; the same plans with lark 1.2.2)"
PYTHONPATH="$ROOT" HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider -n 0 -o addopts="" \
  tests/train/test_version_fit.py tests/golden/test_golden.py

echo "== benchmarks/gpu_check.sh --rehearsal $OUT"
PYTHON="$VENV/bin/python" CRAFT_GPU_WORK=build/gpu_rehearsal CRAFT_GPU_BUDGET_S="${CRAFT_GPU_BUDGET_S:-900}" \
  bash benchmarks/gpu_check.sh --rehearsal "$OUT"
