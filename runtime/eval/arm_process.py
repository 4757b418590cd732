"""One eval process of `eval { processes N }` (``runtime.eval.processes`` starts them).

Run as ``python -m runtime.eval.arm_process --plan-dir P --run-dir R --out-dir STAGING
--seed S --replicate K --replicates N ARM ...``: it reads the plan and the run dir as the
eval step does, decodes the named arms one after another, and writes each arm's
``episodes/<arm>.jsonl`` into the step's staging dir as soon as the arm is done. Before
each batch it takes the cores a finished process freed (``runtime.train.core_share``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["decode_arms", "main"]


def _follow_core_share():
    """A function that takes the launcher's current share of cores, if it keeps one, and says so."""
    from runtime.train.core_share import CORE_SHARE_ENV, take_share

    path = os.environ.get(CORE_SHARE_ENV)

    def follow() -> None:
        threads = take_share(path) if path else None
        if threads is not None:
            print(f"eval: now decoding on {threads} CPU thread(s)", flush=True)
    return follow


def main(argv: list[str] | None = None) -> int:
    """One eval process: decode the named arms and write their episode files. Exit 0, or 2 with a message."""
    parser = argparse.ArgumentParser(prog="python -m runtime.eval.arm_process",
                                     description="Decode some of a plan's eval arms (started by the eval step).")
    for flag in ("--plan-dir", "--run-dir", "--out-dir"):
        parser.add_argument(flag, type=Path, required=True)
    for flag in ("--seed", "--replicate", "--replicates"):
        parser.add_argument(flag, type=int, required=True)
    parser.add_argument("arms", nargs="+")
    args = parser.parse_args(argv)

    from rich.console import Console

    from runtime.plan import PlanError, load_plan
    from runtime.sandbox.guards import die_with_parent
    from runtime.step_context import StepContext, StepError

    die_with_parent()            # a killed step leaves no process writing into its staging dir
    console = Console(soft_wrap=True)
    try:
        plan = load_plan(args.plan_dir)
        ctx = StepContext(plan=plan, plan_dir=args.plan_dir, run_dir=args.run_dir, out_dir=args.out_dir,
                          console=console, seed=args.seed, replicate=args.replicate, replicates=args.replicates)
        decode_arms(ctx, args.arms)
    except (PlanError, StepError) as err:
        console.print(f"[red]error:[/] {err}", highlight=False)
        return 2
    return 0


def decode_arms(ctx, arms: list[str]) -> None:
    """Decode ``arms`` one after another as the eval step does, each written as soon as it is done."""
    from runtime.eval.step import decode_arm, eval_inputs, eval_sandbox, exclusions, reference_frames

    inputs = eval_inputs(ctx, announce=False)
    follow = _follow_core_share()
    with eval_sandbox(ctx, inputs.tasks) as sandbox:
        references = reference_frames(inputs.tasks, sandbox)
        excluded = exclusions(inputs.tasks, references)
        for arm in arms:
            decode_arm(ctx, inputs, arm, sandbox, references, excluded, before_batch=follow)


if __name__ == "__main__":
    sys.exit(main())
