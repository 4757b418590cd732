"""The GRPO job: what one run trains from, read from the plan dir and the step's config.

Everything a run needs comes from the plan dir: the stage's ``trl_config.json`` (passed
to ``GRPOConfig`` unchanged), the reward spec, the system prompt and turn wording
(``specs/input_builder.json``), the masking spec (tool turns are never trained), the
LoRA config and the sandbox's worker count. The ``grpo`` step (:mod:`.step`) adds a
step config with the paths, relative to itself: model, instances, warehouse and
output dir. ``GRPOJob.from_plan`` reads both into plain data, so the trainer never
reads the plan again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from runtime.layout import API_FACTORY
from runtime.train.stages import replicate_seeds

__all__ = ["GRPOSetupError", "GRPOJob", "grpo_stage_defaults", "reward_spec", "reward_llm_judge", "schema_terms", "json_text"]


def reward_llm_judge(job: "GRPOJob"):
    """R_judge's llm judge for this job (``reward { judge_llm NAME }``), or None without one.

    Its verdicts go to the gate's cache (the step config's ``judge_cache``), so a question
    the gate or an earlier step already asked costs no request.
    """
    if not job.plan_dir or not job.judge_cache:
        return None
    from runtime.plan import load_plan
    from runtime.rewards.judge import llm_judge_from_plan

    return llm_judge_from_plan(load_plan(Path(job.plan_dir)), job.plan_dir, job.judge_cache)


def grpo_stage_defaults() -> dict:
    """Every GRPO stage setting's IR default, as ``plan.json`` would write it.

    >>> d = grpo_stage_defaults()
    >>> d["copy_bias"], d["shared_prefix"], d["mask"][:1], "name" in d
    (0.0, 'off', ['tool_outputs'], False)
    """
    from pydantic_core import to_jsonable_python

    from craftc.ir import GRPOStage

    return {name: to_jsonable_python(field.get_default(call_default_factory=True))
            for name, field in GRPOStage.model_fields.items() if not field.is_required()}


class GRPOSetupError(ValueError):
    """A GRPO job that cannot start; the message names the thing and the fix."""


@dataclass
class GRPOJob:
    """Everything one GRPO run needs, as plain data: the plan's parts and the step's paths."""

    model_dir: str
    instances: str                  # JSON file of training instances (the dataset step's format)
    warehouse: str
    out_dir: str
    system_prompt: str
    reward: dict                    # RewardSpec fields: weights, aggregate, penalties, step_rewards
    stage: dict                     # the plan's Stage (max_turns, group, max_new_tokens, temperature, ...)
    trl: dict                       # stages/<stage>/trl_config.json, for GRPOConfig as it is
    wording: dict                   # {"user": ..., "tool": ...}
    fmt: dict                       # block tag names
    workers: int                    # sandbox workers (gate execution { workers })
    secret_env: list                # extra host variables redacted from tool output (gate execution)
    seed: int
    peft: dict | None = None                      # stages/<stage>/peft_config.json (LoraConfig), if any
    schema: dict | None = None                    # craftc.ir.Schema as JSON, for consistency/judge
    api_factory: str = API_FACTORY
    earlier_turns: str = "full"                   # specs/input_builder.json: what later turns see of earlier ones
    # SandboxLimits fields the rows' reference solutions run under: the gate's (gate execution),
    # which ran them before; None: the rollouts' limits.
    reference_limits: dict | None = None
    plan_dir: str | None = None                   # where the plan lives (R_judge's llm judge reads its prompt)
    judge_cache: str | None = None                # the llm judges' verdict cache, when R_judge has one
    measure_instances: str | None = None          # the dev split, measured before and after (step config)

    STEP_KEYS = ("model_dir", "instances", "warehouse", "out_dir")

    def __post_init__(self):
        # plan.json leaves out a setting at the default it had before the setting existed
        # (craftc.ir `_omitted_at`); every such default is filled in from the IR here, so the
        # trainer reads `stage[...]` and each default is stated once, in craftc/ir.py.
        self.stage = {**grpo_stage_defaults(), **self.stage}

    @classmethod
    def from_plan(cls, plan_dir: str | Path, stage_name: str, config: str | Path) -> "GRPOJob":
        """The job of plan stage ``stage_name`` with the step config's paths (relative to the config)."""
        from runtime.agent import TurnWording
        from runtime.plan import PlanError, load_plan

        plan_dir, config = Path(plan_dir), Path(config)
        try:
            plan = load_plan(plan_dir)
            recipe = plan.recipe
            step = json.loads(config.read_text(encoding="utf-8"))
            builder = json.loads((plan_dir / "specs" / "input_builder.json").read_text(encoding="utf-8"))
            masking = json.loads((plan_dir / "specs" / "masking.json").read_text(encoding="utf-8"))
            trl = json.loads((plan_dir / "stages" / stage_name / "trl_config.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, PlanError) as exc:
            raise GRPOSetupError(f"cannot read the GRPO job from plan `{plan_dir}` and config `{config}`: "
                                 f"{exc}") from None
        stage = next((s for s in recipe.stages if s.name == stage_name and s.kind == "grpo"), None)
        problems = [f"step config {config}: missing keys {[k for k in cls.STEP_KEYS if k not in step]}"
                    ] if any(k not in step for k in cls.STEP_KEYS) else []
        if stage is None:
            problems.append(f"plan `{plan_dir}` has no grpo stage named `{stage_name}`")
        elif masking["stages"][stage_name]["roles"]["tool"] != "masked":
            problems.append(f"stage `{stage_name}`: specs/masking.json trains tool turns; GRPO never trains tool "
                            "output (add `tool_outputs` to the stage's `mask`)")
        if problems:
            raise GRPOSetupError("; ".join(problems))
        from runtime.distill.gates import sandbox_limits
        from runtime.rewards import RewardSpec
        from runtime.tracking import run_name
        from runtime.train.adapters import AdapterError, read_peft_config

        try:
            peft = read_peft_config(plan_dir, stage_name)
        except AdapterError as exc:
            raise GRPOSetupError(str(exc)) from None
        spec = RewardSpec.from_json(plan_dir / "specs" / "reward.json")
        from runtime.agent.history import earlier_turns_of
        try:
            earlier_turns = earlier_turns_of(builder)
        except ValueError as exc:
            raise GRPOSetupError(str(exc)) from None
        wording = TurnWording.from_file(plan_dir / builder["turn_template"])
        mode = builder["stages"][stage_name]
        root = config.resolve().parent
        return cls(
            **{key: str(root / step[key]) for key in cls.STEP_KEYS},
            system_prompt=(plan_dir / builder["modes"][mode]["system_prompt"]).read_text(encoding="utf-8"),
            reward={"weights": spec.weights, "aggregate": spec.aggregate, "penalties": spec.penalties,
                    "step_rewards": spec.step_rewards},
            stage=stage.model_dump(mode="json"),
            # The tracker's run name from the plan hash; a `trl { run_name }` wins.
            trl={"run_name": run_name(recipe.name, stage_name, plan.content_hash), **trl,
                 **(replicate_seeds(trl, int(step["seed"])) if "seed" in step else {})}, wording={"user": wording.user, "tool": wording.tool},
            fmt=builder["format"], workers=recipe.gates.execution.workers,
            secret_env=list(recipe.gates.execution.secret_env), seed=int(step.get("seed", recipe.seed)), peft=peft,
            schema=recipe.schema_.model_dump(mode="json"), earlier_turns=earlier_turns,
            reference_limits=sandbox_limits(recipe).to_dict(), plan_dir=str(plan_dir),
            judge_cache=str(root / step["judge_cache"]) if step.get("judge_cache") else None,
            measure_instances=str(root / step["measure_instances"]) if step.get("measure_instances") else None,
        )


def reward_spec(job: GRPOJob):
    """The job's ``runtime.rewards.RewardSpec``, as the reward functions and the measurements use it."""
    from runtime.rewards import RewardSpec
    return RewardSpec(**job.reward)


def schema_terms(job: GRPOJob):
    """The schema's entities, views and metrics the rewards check plans against, or None without one."""
    from craftc.ir import Schema
    from runtime.rewards import SchemaTerms
    return SchemaTerms.from_schema(Schema.model_validate(job.schema)) if job.schema else None


def json_text(data) -> str:
    """The text of a JSON file this stage writes (the step config, the summary): indented, keys sorted."""
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
