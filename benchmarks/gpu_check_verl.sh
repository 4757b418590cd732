#!/usr/bin/env bash
# Stage II on verl, end to end on one GPU machine with network access: the ads recipe's smoke
# profile with its grpo stage switched to `engine verl` (FSDP, vLLM rollouts, 1 GPU), SFT on TRL
# as usual, then the compiled launch.sh runs verl's main_ppo for 2 steps and merges verl's
# checkpoint into RUN/grpo/final. NOT RUN YET. It cannot run on the lent GPU machine: that machine
# has no network, and verl's wheels (ray alone is 76 MiB) do not fit the 64 MiB that travels
# with the tree (benchmarks/gpu_wheelhouse.sh --verl prints the sizes); verl 0.9.1 also asks for
# transformers <5.11 where the image has 5.17.
#
# Usage: benchmarks/gpu_check_verl.sh [--dry-run | --compile-only] [WORK_DIR]   (default build/gpu_check_verl)
#   --dry-run       prints every command and runs none of them
#   --compile-only  runs only the recipe edit and the compile (no GPU, no verl: what CI checks)
set -euo pipefail
MODE=run
case "${1:-}" in
  --dry-run) MODE=dry; shift ;;
  --compile-only) MODE=compile; shift ;;
esac
WORK="${1:-build/gpu_check_verl}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$WORK/venv-verl"
CRAFT_PY="${CRAFT_PYTHON:-$ROOT/.venv/bin/python}"
# The smoke profile's grpo line, as the recipe has it, and the same stage on verl: the
# TRL-only settings (`measure`, `history policy`) left out, dynamic sampling and the default's
# measurement between steps turned off (`measure_every 0`),
# since verl refuses them (E516); the fresh rows stay (verl plays the same rows).
SMOKE_GRPO='^(    stage grpo \{ steps 2  group 2  max_new_tokens 48  batch 2  per_device_batch 2)  measure 1  history policy  (fresh_instances 1)  dynamic_sampling 1 \}$'
VERL_GRPO='\1  history reference  \2  dynamic_sampling 0  measure_every 0  engine verl  rollout vllm  parallel fsdp2  gpus 1 }'

run() {
  echo "+ $*"
  if [ "$MODE" != dry ]; then (cd "$ROOT" && eval "$*"); fi
}

# 1. craft's environment (TRL path: world .. sft; no editor tooling) and a verl environment.
if [ "$MODE" = run ] || [ "$MODE" = dry ]; then
  run "[ -x $CRAFT_PY ] || { python3 -m venv .venv && .venv/bin/pip install --quiet -e . ; }"
  run "python3 -m venv $VENV"
  run "$VENV/bin/pip install --quiet 'verl[vllm]==0.9.1' 'cachetools>=5' 'uvicorn>=0.30' 'TransferQueue>=0.1.10' pyzmq msgspec fastapi lark pydantic jinja2 rich duckdb sqlglot pyyaml"
fi
# 2. The smoke profile with Stage II on verl.
run "mkdir -p $WORK/recipes && ln -sfn $ROOT/schema_specs $WORK/schema_specs && ln -sfn $ROOT/examples $WORK/examples"
run "sed -E 's/$SMOKE_GRPO/$VERL_GRPO/' recipes/ads_analytics.craft > $WORK/recipes/ads_analytics.craft"
run "grep -q 'engine verl' $WORK/recipes/ads_analytics.craft"
run "PYTHONPATH=$ROOT $CRAFT_PY -m craftc.cli compile $WORK/recipes/ads_analytics.craft -o $WORK/plan --profile smoke"
run "grep -q 'attn_implementation=sdpa' $WORK/plan/stages/grpo/verl_overrides.txt"
if [ "$MODE" = compile ]; then exit 0; fi
# 3. Everything up to SFT on TRL, then the verl stage prepared and launched; launch.sh merges
#    the last checkpoint into run/grpo/final.
run "PYTHONPATH=$ROOT $CRAFT_PY -m craftc.cli run $WORK/plan --run-dir $WORK/run --until sft"
run "PYTHONPATH=$ROOT $CRAFT_PY -m craftc.cli run $WORK/plan --run-dir $WORK/run --only grpo --no-launch"
run "nvidia-smi --query-gpu=name,memory.total --format=csv"
run "PYTHON=$VENV/bin/python PYTHONPATH=$ROOT timeout 540 bash $WORK/plan/stages/grpo/launch.sh $WORK/run/grpo/grpo_config.json 2>&1 | tee $WORK/verl_launch.log"
run "grep -E 'step:2|critic/score/mean|outcome' $WORK/verl_launch.log | tail -5"
run "test -f $WORK/run/grpo/final/config.json && ls $WORK/run/grpo/final"
