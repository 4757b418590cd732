#!/usr/bin/env bash
# The GPU check: the ads recipe's `gpu` profile end to end on the lent GPU machine, offline,
# in one command of at most 540 s: a GPU-sized MoE built from scratch (no weights travel),
# SFT in bf16 through accelerate (FSDP2 on one GPU), GRPO with transformers rollouts on the
# GPU, eval and the report. It uses the image's torch, transformers and accelerate; what the
# image lacks comes from the wheelhouse that benchmarks/gpu_wheelhouse.sh builds (carried
# with the working tree), installed with `pip install --no-index --no-deps`.
#
#   bash benchmarks/gpu_check.sh OUT_DIR               # on the GPU machine; figures into OUT_DIR
#   bash benchmarks/gpu_check.sh --dry-run OUT_DIR     # print every command, run nothing
#   bash benchmarks/gpu_check.sh --rehearsal OUT_DIR   # the same pipeline on the CPU at the smoke
#                                                      # profile's size, in an environment that has
#                                                      # the packages already (make gpu-rehearsal)
# Environment: GPU_WHEELS (default .gpu-wheels/cp312), PYTHON (default python3), CRAFT_GPU_WORK
# (plan, run and installed wheels; default build/gpu_check), CRAFT_GPU_BUDGET_S (default 500:
# the run's own limit, inside the 540 s).
# Figures (OUT_DIR): figures.json, figures.md, sft_loss.png, grpo_rewards.png, report.md,
# run.log: tokens/s, steps/s, peak GPU memory, an MFU estimate, loss and reward curves
# (benchmarks/gpu_figures.py says how each is measured). docs/gpu-check.md, "The lent GPU
# machine", gives the command sequence.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DRY_RUN=0
REHEARSAL=0
OUT=""
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1 ;;
    --rehearsal) REHEARSAL=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "gpu_check.sh: unknown argument \`$arg\` (use --dry-run, --rehearsal)" >&2; exit 2 ;;
    *) OUT="$arg" ;;
  esac
done
OUT="${OUT:-build/gpu_check/out}"
PY="${PYTHON:-python3}"
WHEELS="${GPU_WHEELS:-.gpu-wheels/cp312}"
WORK="${CRAFT_GPU_WORK:-build/gpu_check}"
BUDGET="${CRAFT_GPU_BUDGET_S:-500}"
PROFILE=gpu
if [ "$REHEARSAL" = 1 ]; then PROFILE=smoke; fi
PLAN="$WORK/plan"
RUN="$WORK/run"

run() {
  echo "+ $*"
  if [ "$DRY_RUN" = 0 ]; then "$@"; fi
}

if [ "$DRY_RUN" = 0 ] && [ "$REHEARSAL" = 0 ] && ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check.sh: no nvidia-smi here: this check needs a CUDA GPU (--dry-run prints the commands, --rehearsal runs them on the CPU)" >&2
  exit 1
fi
if [ "$DRY_RUN" = 0 ]; then
  rm -rf "$PLAN" "$RUN"
  mkdir -p "$OUT" "$WORK"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1

# 1. What the image lacks, offline; craft itself from this tree (PYTHONPATH), as the image's
#    Python runs it. The rehearsal's environment has them installed already.
if [ "$REHEARSAL" = 0 ]; then
  run nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  if [ "$DRY_RUN" = 0 ] && ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    echo "gpu_check.sh: no wheels in $WHEELS: build them with benchmarks/gpu_wheelhouse.sh and carry them" >&2
    exit 1
  fi
  run "$PY" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" "$WHEELS"/*.whl
  export PYTHONPATH="$ROOT:$ROOT/$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi
# 2. The versions it runs with, what craft needs at run time (peft for LoRA, tensorboard for
#    `track tensorboard`), and pyproject's lower bounds against them.
run "$PY" benchmarks/gpu_versions.py

# 3. Compile and run, the GPU's memory sampled once a second meanwhile.
START=$(date +%s)
run "$PY" -m craftc.cli compile recipes/ads_analytics.craft -o "$PLAN" --profile "$PROFILE"
PEAK_LOG="$OUT/gpu_memory.log"
if [ "$REHEARSAL" = 0 ]; then
  if [ "$DRY_RUN" = 0 ]; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -l 1 > "$PEAK_LOG" &
    SAMPLER=$!
    trap 'kill "$SAMPLER" 2>/dev/null || true' EXIT
  fi
  echo "+ nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -l 1 > $PEAK_LOG &"
fi
STATUS=0
echo "+ timeout $BUDGET $PY -m craftc.cli run $PLAN --run-dir $RUN 2>&1 | tee $OUT/run.log"
if [ "$DRY_RUN" = 0 ]; then
  set +e
  timeout "$BUDGET" "$PY" -m craftc.cli run "$PLAN" --run-dir "$RUN" 2>&1 | tee "$OUT/run.log"
  STATUS=${PIPESTATUS[0]}
  set -e
fi
END=$(date +%s)

# 4. The figures, from the run dir.
run "$PY" benchmarks/gpu_figures.py "$RUN" "$OUT" --peak-log "$PEAK_LOG" --wall "$((END - START))"
if [ "$STATUS" != 0 ]; then
  echo "gpu_check.sh: the run ended with status $STATUS (124: past the $BUDGET s budget); see $OUT/run.log" >&2
  exit "$STATUS"
fi
