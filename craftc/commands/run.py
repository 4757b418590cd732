"""``craftc run``: execute a plan dir step by step (the runtime; training steps bring torch)."""

from __future__ import annotations

from pathlib import Path

from craftc.commands.common import UserError
from runtime.runner import run_plan

__all__ = ["run"]


def _default_plan_dir() -> Path:
    plans = sorted(p.parent for p in Path("build").glob("*/plan.json"))
    if len(plans) != 1:
        found = ", ".join(str(p) for p in plans) or "none"
        raise UserError(f"give the plan dir to run: `craftc run PLAN_DIR` (plans found under build/: {found})")
    return plans[0]


def run(args) -> int:
    plan_dir = Path(args.plan_dir) if args.plan_dir else _default_plan_dir()
    return run_plan(plan_dir, args.run_dir, only=args.only, from_step=args.from_step, until=args.until,
                    force=args.force, launch=not args.no_launch, replicates=args.replicates)
