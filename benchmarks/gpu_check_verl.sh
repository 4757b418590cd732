#!/usr/bin/env bash
# Stage II on verl, end to end on one GPU machine: the ads recipe's smoke profile with its grpo
# stage switched to `engine verl` (FSDP, vLLM rollouts, 1 GPU), SFT on TRL as usual, then the
# compiled launch.sh runs verl's main_ppo for 2 steps. NOT RUN YET: written for a GPU machine;
# docs/training.md says what has been run where.
#
# Usage: benchmarks/gpu_check_verl.sh [--dry-run] [WORK_DIR]   (default WORK_DIR build/gpu_check_verl)
#   --dry-run prints every command and runs none of them.
set -euo pipefail
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
WORK="${1:-build/gpu_check_verl}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$WORK/venv-verl"
SMOKE_GRPO='stage grpo { steps 2  group 2  max_new_tokens 48  batch 2  per_device_batch 2  measure 4 }'
VERL_GRPO='stage grpo { steps 2  group 2  max_new_tokens 48  batch 2  per_device_batch 2  measure 4  engine verl  rollout vllm  parallel fsdp2  gpus 1 }'

run() {
  echo "+ $*"
  if [ "$DRY" = 0 ]; then (cd "$ROOT" && eval "$*"); fi
}

# 1. craft's default environment (TRL path: world .. sft) and a verl environment for the launch.
run "make setup"
run "python3 -m venv $VENV"
run "$VENV/bin/pip install --quiet 'verl[vllm]==0.9.1' 'cachetools>=5' 'uvicorn>=0.30' 'TransferQueue>=0.1.10' pyzmq msgspec fastapi lark pydantic jinja2 rich duckdb sqlglot pyyaml"
run "$VENV/bin/pip install --quiet --no-deps -e ."
# 2. The smoke profile with Stage II on verl.
run "mkdir -p $WORK/recipes && ln -sfn $ROOT/schema_specs $WORK/schema_specs && ln -sfn $ROOT/examples $WORK/examples"
run "sed 's/$SMOKE_GRPO/$VERL_GRPO/' recipes/ads_analytics.craft > $WORK/recipes/ads_analytics.craft"
run "grep -q 'engine verl' $WORK/recipes/ads_analytics.craft"
run ".venv/bin/craftc compile $WORK/recipes/ads_analytics.craft -o $WORK/plan --profile smoke"
# 3. Everything up to SFT on TRL, then the verl stage prepared and launched.
run ".venv/bin/craftc run $WORK/plan --run-dir $WORK/run --until sft"
run ".venv/bin/craftc run $WORK/plan --run-dir $WORK/run --only grpo --no-launch"
run "nvidia-smi --query-gpu=name,memory.total --format=csv"
run "PYTHON=$VENV/bin/python PYTHONPATH=$ROOT timeout 1800 bash $WORK/plan/stages/grpo/launch.sh $WORK/run/grpo/grpo_config.json 2>&1 | tee $WORK/verl_launch.log"
run "grep -E 'step:2|critic/score/mean|outcome' $WORK/verl_launch.log | tail -5"
