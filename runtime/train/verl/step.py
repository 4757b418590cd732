"""The ``grpo`` step for a stage with ``engine verl``: prepare, validate, then launch or hand off.

It reads every verl file the compiler wrote for the stage (checking that the tool and
agent-loop YAML parse and name craft's classes), writes verl's RL parquet
(``train.parquet``) and a step config (``grpo_config.json``: model, data, warehouse and
output paths relative to itself) into the step dir, and runs the stage's ``launch.sh``
with it. verl trains on GPUs only: on a machine without one the step stops before
preparing anything and names the hand-off (``craftc run --no-launch`` here, then the
launch script on the cluster).
"""

from __future__ import annotations

import json
import shlex

import yaml

from runtime.layout import API_FACTORY, GRPO_STEP_CONFIG, SFT_FINAL, WAREHOUSE

__all__ = ["run_verl_step", "visible_gpus"]
_STAGE_FILES = ("verl_overrides.txt", "tool_config.yaml", "agent_loop.yaml", "reward.py", "rl_data.json")


def visible_gpus() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _read_stage_files(ctx, stage) -> dict:
    from runtime.step_context import StepError

    base = f"stages/{stage.name}"
    texts = {name: ctx.artifact(f"{base}/{name}").read_text(encoding="utf-8") for name in _STAGE_FILES}
    try:
        tools = yaml.safe_load(texts["tool_config.yaml"])["tools"]
        loops = yaml.safe_load(texts["agent_loop.yaml"])
        spec = json.loads(texts["rl_data.json"])
    except (yaml.YAMLError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise StepError(f"the verl files of stage `{stage.name}` in {ctx.plan_dir / base} do not parse ({exc}); "
                        "recompile with `craftc compile`") from None
    problems = []
    if [t["tool_schema"]["function"]["name"] for t in tools] != ["run_code"]:
        problems.append("tool_config.yaml must declare the one `run_code` tool")
    if not any(loop.get("name") == spec["agent_name"] for loop in loops):
        problems.append(f"agent_loop.yaml does not register `{spec['agent_name']}`")
    if not [line for line in texts["verl_overrides.txt"].splitlines() if line and not line.startswith("#")]:
        problems.append("verl_overrides.txt holds no override")
    if problems:
        raise StepError(f"stage `{stage.name}`: " + "; ".join(problems) + "; recompile with `craftc compile`")
    return spec


def _write_rows(ctx, stage, spec: dict) -> int:
    from craftc.ir import BlockFormat
    from runtime.agent import TurnWording, load_tasks
    from runtime.sandbox import SandboxLimits, SandboxPool
    from runtime.train.train_split import write_train_instances
    from runtime.agent.history import earlier_turns_of
    from runtime.step_context import StepError
    from runtime.train.verl.data import rl_rows, write_parquet

    builder = json.loads(ctx.artifact("specs/input_builder.json").read_text(encoding="utf-8"))
    system_prompt = ctx.artifact(builder["modes"][builder["stages"][stage.name]]["system_prompt"]).read_text(
        encoding="utf-8")
    wording = TurnWording.from_file(ctx.artifact(builder["turn_template"]))
    ctx.artifact("specs/reward.json")          # read by the reward module on the cluster (scoring.plan_context)
    try:
        earlier_turns = earlier_turns_of(builder)
    except ValueError as exc:
        raise StepError(str(exc)) from None
    tasks = load_tasks(write_train_instances(ctx))
    gate = ctx.plan.recipe.gates.execution
    limits = SandboxLimits(secret_env=tuple(gate.secret_env))
    with SandboxPool(gate.workers, ctx.input(WAREHOUSE), limits, API_FACTORY) as sandbox:
        rows = rl_rows(tasks, system_prompt, wording, BlockFormat(**builder["format"]), sandbox, spec,
                       earlier_turns)
    write_parquet(rows, ctx.out_dir / "train.parquet")
    return len(rows)


def run_verl_step(ctx):
    """The ``grpo`` step of a plan whose grpo stage says ``engine verl``."""
    from runtime.step_context import StepError, StepResult
    from runtime.train.launch import launch_env, run_launch, stage_command
    from runtime.train.stages import grpo_stage

    stage = grpo_stage(ctx.plan.recipe)
    script = ctx.artifact(f"stages/{stage.name}/launch.sh")
    final_config = GRPO_STEP_CONFIG.under(ctx.run_dir)
    by_hand = shlex.join(stage_command(script, final_config))
    if ctx.launch and visible_gpus() == 0:
        raise StepError(f"stage `{stage.name}` trains with engine verl, which needs GPUs and this machine has none: "
                        f"stopping before launching. Prepare it here with `craftc run {ctx.plan_dir} --no-launch` "
                        f"(RL parquet, step config, tool and reward files checked), then on the cluster, in an "
                        f"environment with verl[{stage.rollout}]==0.9.1 and craft, run `{by_hand}`")
    spec = _read_stage_files(ctx, stage)
    ctx.input_dir(SFT_FINAL.step)       # GRPO starts from the sft step's model: that step must have run
    rows = _write_rows(ctx, stage, spec)
    (ctx.out_dir / GRPO_STEP_CONFIG.path).write_text(json.dumps(
        {"model_dir": SFT_FINAL.relative_to_step("grpo"), "train_files": "train.parquet",
         "warehouse": WAREHOUSE.relative_to_step("grpo"), "out_dir": "."}, indent=2, sort_keys=True) + "\n")
    metrics = {"engine": "verl", "rl_rows": rows, "commands": {"grpo": stage_command(script, final_config)}}
    if not ctx.launch:
        ctx.console.print(f"launch by hand on the cluster: {by_hand}")
        return StepResult(metrics={**metrics, "launch": "manual"}, outputs=("train.parquet", GRPO_STEP_CONFIG.path))
    run_launch(stage_command(script, ctx.out_dir / GRPO_STEP_CONFIG.path), env=launch_env())
    return StepResult(metrics={**metrics, "launch": "step"}, outputs=("train.parquet", GRPO_STEP_CONFIG.path))
