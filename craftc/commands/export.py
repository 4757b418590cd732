"""``craftc export``: a trained stage of a run as a Hugging Face model dir with a model card."""

from __future__ import annotations

import json
from pathlib import Path

from craftc.commands.common import UserError
from runtime.export import ExportError, export_stage, push_to_hub
from runtime.plan import PlanError, load_plan

__all__ = ["run"]


def run(args) -> int:
    run_dir = Path(args.run_dir)
    record = run_dir / "run.json"
    if not record.is_file():
        raise UserError(f"`{run_dir}` has no run.json, so it is not a run dir; pass the `--run-dir` of a `craftc run`")
    ran = json.loads(record.read_text(encoding="utf-8"))
    plan_dir = Path(args.plan) if args.plan else Path("build") / ran["recipe"]
    try:
        plan = load_plan(plan_dir)
    except PlanError as exc:
        raise UserError(f"{exc} (the plan `{run_dir}` ran; pass it with --plan)") from None
    if plan.content_hash != ran["plan_hash"]:
        raise UserError(f"`{plan_dir}` is not the plan `{run_dir}` ran (plan hash {plan.content_hash[:12]}, "
                        f"run {ran['plan_hash'][:12]}); pass the right one with --plan, or rerun the plan")
    try:
        out = export_stage(plan, plan_dir, run_dir, Path(args.output), args.stage, args.adapter_only)
        print(f"exported stage {args.stage or plan.recipe.stages[-1].name} of {run_dir} -> {out}")
        if args.push:
            files = push_to_hub(out, args.push, dry_run=args.dry_run)
            verb = "would push" if args.dry_run else "pushed"
            print(f"{verb} {len(files)} files to https://huggingface.co/{args.push}: {', '.join(files)}")
    except ExportError as exc:
        raise UserError(str(exc)) from None
    return 0
