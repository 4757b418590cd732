#!/usr/bin/env bash
# The wheels the lent GPU machine lacks, built here for its Python (CPython 3.12, x86-64,
# manylinux): what craft needs beyond the image's torch 2.11, transformers 5.17, accelerate
# 1.15, tokenizers 0.23.2, peft, pyarrow, pandas, tensorboard, rich, jinja2, pyyaml,
# safetensors, psutil, matplotlib and huggingface_hub. The machine has no network, so
# benchmarks/gpu_check.sh installs these offline (`pip install --no-index --no-deps`).
#
#   bash benchmarks/gpu_wheelhouse.sh [DIR]                 # default DIR .gpu-wheels/cp312 (ignored by git)
#   PY_VERSION=3.11 bash benchmarks/gpu_wheelhouse.sh DIR   # the same set for another Python (the CPU rehearsal)
#   bash benchmarks/gpu_wheelhouse.sh --verl [DIR]          # also verl 0.9.1 and what it needs, to see whether it fits
#
# The total printed at the end must leave room under the 64 MiB a lent machine takes (working tree
# plus carried paths); the tree itself is about 3.5 MB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERL=0
if [ "${1:-}" = "--verl" ]; then VERL=1; shift; fi
PY_VERSION="${PY_VERSION:-3.12}"
DIR="${1:-.gpu-wheels/cp${PY_VERSION/./}}"
PIP="${PIP:-python3 -m pip}"
LIMIT_MIB=64

# One version of each, the versions craft is tested with. lark 1.2.2 is the one every vLLM
# from 0.22 to 0.31 pins; the compiler writes the same plan with it (tests/train/test_version_fit.py).
WHEELS=(
  trl==1.16.0
  datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
  duckdb==2.0.1 sqlglot==30.31.0 lark==1.2.2
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
)
# verl 0.9.1 and what it needs that the image lacks (ray alone is larger than the limit);
# verl 0.9.1 also asks for transformers <5.11, and the image has 5.17.
VERL_WHEELS=(
  verl==0.9.1 "ray>=2.41" codetiming hydra-core omegaconf 
  "tensordict>=0.8,<=0.10.0" torchdata pylatexenc wandb cachetools uvicorn "TransferQueue>=0.1.10" msgspec fastapi pyzmq
)
PLATFORMS=(--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64
           --platform manylinux_2_34_x86_64 --platform manylinux_2_35_x86_64 --platform any)

mkdir -p "$DIR"
echo "+ pip download (cp${PY_VERSION/./}, manylinux x86-64) -> $DIR: ${WHEELS[*]}"
$PIP download --quiet --no-deps --only-binary=:all: --python-version "$PY_VERSION" --implementation cp \
  "${PLATFORMS[@]}" -d "$DIR" "${WHEELS[@]}" 2> >(grep -v "^WARNING: Location" >&2)
if [ "$VERL" = 1 ]; then
  mkdir -p "$DIR-verl"
  echo "+ pip download (verl) -> $DIR-verl: ${VERL_WHEELS[*]}"
  for spec in "${VERL_WHEELS[@]}"; do   # one at a time: hydra's antlr4 4.9.3 has no wheel at all
    $PIP download --quiet --no-deps --only-binary=:all: --python-version "$PY_VERSION" --implementation cp \
      "${PLATFORMS[@]}" -d "$DIR-verl" "$spec" 2>/dev/null || echo "  no cp${PY_VERSION/./} wheel: $spec"
  done
  echo "  (hydra-core 1.3 needs antlr4-python3-runtime 4.9.*, which PyPI has only as a source archive)"
fi

python3 - "$DIR" "$LIMIT_MIB" "$VERL" <<'PY'
import subprocess, sys
from pathlib import Path

wheels, limit, verl = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
tracked = sum(Path(p).stat().st_size for p in subprocess.run(
    ["git", "ls-files", "-z"], capture_output=True, text=True, check=True).stdout.split("\0") if p and Path(p).is_file())
def total(d):
    return sum(p.stat().st_size for p in d.glob("*.whl"))
for w in sorted(wheels.glob("*.whl")):
    print(f"  {w.stat().st_size / 2**20:7.2f} MiB  {w.name}")
size = total(wheels)
print(f"wheelhouse {wheels}: {len(list(wheels.glob('*.whl')))} wheels, {size / 2**20:.1f} MiB; "
      f"with the tracked tree ({tracked / 2**20:.1f} MiB): {(size + tracked) / 2**20:.1f} MiB of {limit} MiB")
if size + tracked > limit * 2**20:
    sys.exit("the wheelhouse and the tree do not fit the 64 MiB a lent machine takes")
if verl:
    extra = Path(str(wheels) + "-verl")
    more = total(extra)
    print(f"verl wheels {extra}: {more / 2**20:.1f} MiB; all together {(size + more + tracked) / 2**20:.1f} MiB: "
          + ("fits" if size + more + tracked <= limit * 2**20 else f"does NOT fit under {limit} MiB"))
PY
