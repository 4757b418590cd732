"""The trainer's command line, what a stage's ``launch.sh`` runs under ``accelerate launch``:
``python -m runtime.train.grpo --plan-dir PLAN --stage NAME --config STEP_CONFIG.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from runtime.train.grpo.job import GRPOJob, GRPOSetupError
from runtime.train.grpo.trainer import is_main_process, train_grpo

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``python -m runtime.train.grpo --plan-dir PLAN --stage NAME --config STEP_CONFIG.json``."""
    from runtime.train import grpo      # `--help` describes the stage: the package docstring's first line

    parser = argparse.ArgumentParser(prog="python -m runtime.train.grpo", description=grpo.__doc__.split("\n")[0])
    parser.add_argument("--plan-dir", required=True, help="the compiled plan dir")
    parser.add_argument("--stage", required=True, help="the grpo stage's name in the plan")
    parser.add_argument("--config", required=True, help="step config JSON: model_dir, instances, warehouse, out_dir")
    args = parser.parse_args(argv)
    # TRL's generation helper reads `model.is_gradient_checkpointing`, which transformers 5
    # deprecates: one FutureWarning per GRPO step that says nothing about the run.
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    try:
        summary = train_grpo(GRPOJob.from_plan(args.plan_dir, args.stage, args.config))
    except GRPOSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if is_main_process():
        print(json.dumps({k: summary[k] for k in ("steps", "before", "after", "before_sampled", "after_sampled")},
                         sort_keys=True))
    _end_distributed()
    return 0


def _end_distributed() -> None:
    """Leave the process group cleanly (see runtime.train.sft): every rank waits, then tears down."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
