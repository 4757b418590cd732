"""The ``grpo`` step of ``craftc run``: write the step config, launch the stage, read its summary.

The step trains nothing in-process: it names the plan files the trainer reads, writes
the train split and a step config with paths relative to itself (so the run dir can
move to another machine), and runs the plan's ``stages/<stage>/launch.sh``, which runs
``python -m runtime.train.grpo`` under ``accelerate launch``. A stage with
``engine verl`` goes to runtime.train.verl instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime.layout import (GRPO_FINAL, GRPO_STEP_CONFIG, GRPO_SUMMARY, MANIFEST, MEASURE_INSTANCES, ROWS_AUDIT,
                            SFT_FINAL, TRAIN_INSTANCES, WAREHOUSE, reads_grpo)
from runtime.train.grpo.job import json_text
from runtime.train.train_split import write_train_instances

__all__ = ["run_grpo", "adopt_grpo_step"]


def run_grpo(ctx):
    """The ``grpo`` step: GRPO from the SFT checkpoint into ``RUN_DIR/grpo``, through ``launch.sh``."""
    from runtime.step_context import StepError, StepResult
    from runtime.train.launch import PreflightError, launch_stage, preflight
    from runtime.train.precision import warn_stage_software_bf16
    from runtime.train.stages import grpo_stage

    arms = ctx.plan.recipe.eval.arms
    if not reads_grpo(arms):
        # Nothing decodes GRPO's model: a dev profile that scores `sft_only` alone pays for no
        # Stage II (on SmolLM2 on 2 cores, 15 minutes for 2 steps).
        return StepResult(skipped=f"no eval arm decodes its model (`eval {{ arms {', '.join(arms)} }}` "
                                  "names no `craft`)")
    stage = grpo_stage(ctx.plan.recipe)
    if stage.engine == "verl":
        from runtime.train.verl.step import run_verl_step
        return run_verl_step(ctx)
    if ctx.launch:     # a launch by hand runs where the engine and GPUs are: check here only when training here
        try:
            preflight({"parallel": stage.parallel, "gpus": stage.gpus, "rollout": stage.rollout})
        except PreflightError as exc:
            raise StepError(f"stage `{stage.name}` cannot train on this machine: {exc}; or prepare it with "
                            "`craftc run --no-launch` and run its launch.sh where it can") from None
    # The plan files the trainer reads (GRPOJob.from_plan), named in this step's manifest.
    builder = json.loads(ctx.artifact("specs/input_builder.json").read_text(encoding="utf-8"))
    for rel in (builder["turn_template"], builder["modes"][builder["stages"][stage.name]]["system_prompt"],
                "specs/reward.json", "specs/masking.json", "specs/gates.json", f"stages/{stage.name}/trl_config.json",
                *([f"stages/{stage.name}/peft_config.json"] if stage.lora is not None else [])):
        ctx.artifact(rel)
    write_train_instances(ctx)
    warn_stage_software_bf16(ctx, stage)
    if stage.copy_bias:
        ctx.console.print(f"grpo: rollouts and the measured rows decode with `copy_bias {stage.copy_bias:g}` (the "
                          "asked words' logits raised, as eval decodes)")
    ctx.input_dir(SFT_FINAL.step)       # GRPO starts from the sft step's model: that step must have run
    judge_cache = _reward_judge_cache(ctx)
    # Paths relative to this config's directory: the run dir can move to another machine.
    (ctx.out_dir / GRPO_STEP_CONFIG.path).write_text(json_text({
        "model_dir": SFT_FINAL.relative_to_step("grpo"), "instances": TRAIN_INSTANCES.relative_to_step("grpo"),
        "warehouse": WAREHOUSE.relative_to_step("grpo"), "out_dir": ".",
        "measure_instances": MEASURE_INSTANCES.relative_to_step("grpo"),
        # R_judge's llm judge shares the gate's verdict cache (runtime.rewards.judge).
        **({"judge_cache": judge_cache} if judge_cache else {}),
        # A replicate (`craftc run --replicates N`) trains with its own seed.
        **({"seed": ctx.seed} if ctx.replicate else {})}))
    command = launch_stage(ctx, "grpo", stage.name, ctx.out_dir / GRPO_STEP_CONFIG.path)
    if not ctx.launch:
        return StepResult(metrics={"launch": "manual", "commands": {"grpo": command}})
    audit = (ROWS_AUDIT.path,) if (ctx.out_dir / ROWS_AUDIT.path).is_file() else ()
    return StepResult(metrics={"launch": "step", "commands": {"grpo": command}, **_summary_metrics(ctx.out_dir)},
                      outputs=(GRPO_FINAL.path, "metrics.jsonl", GRPO_SUMMARY.path, *audit))


def _reward_judge_cache(ctx) -> str | None:
    """With ``reward { judge_llm NAME }``: the gate's verdict cache, relative to the step dir
    (the trainer asks the judge there); the judge's prompt is named in the manifest."""
    import os

    from runtime.distill.step import judge_cache_dir
    from runtime.rewards.judge import reward_judge_entry

    found = reward_judge_entry(ctx.plan_dir)
    if found is None:
        return None
    ctx.artifact(found["entry"]["prompt"])
    cache = judge_cache_dir(ctx, ctx.plan.recipe.gates.judge.cache)
    return os.path.relpath(cache, ctx.run_dir / "grpo")


def _summary_metrics(step_dir: Path) -> dict:
    from runtime.step_context import StepError

    path = step_dir / GRPO_SUMMARY.path
    if not (path.is_file() and (step_dir / GRPO_FINAL.path).is_dir()):
        raise StepError(f"GRPO left no {path.name} and final/ in {step_dir}; run the stage's launch.sh with "
                        f"{step_dir / GRPO_STEP_CONFIG.path} first, or rerun the grpo step")
    summary = json.loads(path.read_text())
    # `measure 0` measured nothing: its before, after and change are null.
    measured = {f"{when}{kind}_{k}": summary[f"{when}{kind}"][k] for when in ("before", "after")
                for kind in ("", "_sampled") for k in ("total", "exec_success") if summary[f"{when}{kind}"]}
    return {"steps": summary["steps"], "wall_s": summary["wall_s"], "world_size": summary["world_size"],
            **measured,
            # Older summaries (before fresh rows) carry none of these.
            **{k: summary[k] for k in ("measured_on", "rows_drawn", "copy_bias") if k in summary},
            **({"change_greedy_total": summary["change"]["greedy"]["total"]} if summary.get("change") else {}),
            **({"dynamic_dropped": summary["dynamic_sampling"]["dropped"],
                "dynamic_groups": summary["dynamic_sampling"]["groups"]} if "dynamic_sampling" in summary else {})}


def adopt_grpo_step(ctx, step_dir: Path) -> dict:
    """The metrics of a grpo step prepared with `--no-launch` and trained by hand."""
    manifest = json.loads((step_dir / MANIFEST).read_text(encoding="utf-8"))
    return {**manifest["metrics"], **_summary_metrics(step_dir)}
