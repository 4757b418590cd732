"""The JSON specs the runtime reads: input builder, masking, gates and reward.

Each function is pure: IR in, a JSON-ready dict out. Everything a step needs to
know is resolved here (judge names to judge settings, weights to normalised weights),
so the runtime never re-derives a compiler decision.
"""

from __future__ import annotations

from craftc.emit.errors import EmitError
from craftc.emit.prompts import judge_prompt_path
from craftc.ir import ARM_INPUT, BUILTIN_JUDGES, REWARD_COMPONENTS, Judge, Recipe, Stage

__all__ = ["REWARD_COMPONENTS", "input_builder_spec", "masking_spec", "gates_spec", "reward_spec",
           "normalised_weights", "stop_token"]

_ROLES = ("system", "user", "assistant", "tool")
# The mask setting that covers each chat role.
_MASK_OF_ROLE = {"system": "system", "user": "user", "tool": "tool_outputs"}


def input_builder_spec(recipe: Recipe, turn_sections: dict[str, str]) -> dict:
    """How model inputs are assembled for each input mode, stage and eval arm."""
    modes = {
        mode: {"system_prompt": f"prompts/system_{mode}.md", "roles": list(_ROLES)}
        for mode in ("stripped", "stuffed")
    }
    spec = {
        "modes": modes,
        "stages": {stage.name: stage.input for stage in recipe.stages},
        "eval_arms": {arm: ARM_INPUT[arm] for arm in recipe.eval.arms},
        "turn_template": "prompts/turn.md",
        "user_turn": turn_sections.get("user", "{ask}"),
        "tool_turn": turn_sections.get("tool", "{output}"),
        "format": recipe.format.model_dump(mode="json"),
        "max_turns": recipe.eval.max_turns,
    }
    # Written only where set, so a recipe that leaves it compiles to the plan it did before.
    if recipe.earlier_turns != "full":
        spec["earlier_turns"] = recipe.earlier_turns
    return spec


def stop_token(recipe: Recipe, stage: Stage) -> str | None:
    """The end-of-turn token that must be trained; None means the tokenizer's eos token."""
    for model in recipe.models:
        if model.name == stage.base and model.source != "tiny_moe":
            return None
    return "<|im_end|>"   # tiny_moe's ChatML template


def masking_spec(recipe: Recipe) -> dict:
    """Per stage and role: trained or masked, plus the stop token that must be trained."""
    stages = {}
    for stage in recipe.stages:
        roles = {role: ("masked" if _MASK_OF_ROLE[role] in stage.mask else "trained")
                 for role in ("system", "user", "tool")}
        roles["assistant"] = "trained"
        stages[stage.name] = {
            "roles": dict(sorted(roles.items())),
            "assistant_only_loss": all(v == "masked" for r, v in roles.items() if r != "assistant"),
            "stop_token": stop_token(recipe, stage),
            "stop_token_trained": True,
        }
    return {"stages": stages}


def _resolve_judge(recipe: Recipe, name: str) -> dict:
    declared: dict[str, Judge] = {judge.name: judge for judge in recipe.judges}
    judge = declared.get(name)
    if judge is None and name in BUILTIN_JUDGES:   # a deterministic judge named by its kind
        judge = Judge(name=name, kind=name)
    if judge is None:
        raise EmitError(
            f"gate judge names judge `{name}`, which is neither declared with `judge {name} {{ ... }}` "
            f"nor built in ({', '.join(BUILTIN_JUDGES)}); declare it or remove it from `judges`"
        )
    return _judge_entry(judge)


def _judge_entry(judge: Judge) -> dict:
    """A judge's settings; an llm judge also names its prompt, which the gate step reads."""
    entry = judge.model_dump(mode="json")
    if judge.kind == "llm":
        entry["prompt"] = judge_prompt_path(judge.name)
    return entry


def gates_spec(recipe: Recipe) -> dict:
    """The gate order, each gate's settings and the resolved judge ensemble."""
    gates = recipe.gates
    judge_gate = gates.judge.model_dump(mode="json")
    judge_gate["judges"] = [_resolve_judge(recipe, name) for name in gates.judge.judges]
    return {
        "order": list(gates.order),
        "execution": gates.execution.model_dump(mode="json"),
        "output": gates.output.model_dump(mode="json"),
        "judge": judge_gate,
    }


def normalised_weights(recipe: Recipe) -> dict[str, float]:
    """The reward weights scaled to sum to 1 (as given when they sum to 0)."""
    given = {name: getattr(recipe.reward, name) for name in REWARD_COMPONENTS}
    total = sum(given.values())
    if total <= 0:
        return given
    return {name: round(weight / total, 12) for name, weight in given.items()}


def reward_spec(recipe: Recipe) -> dict:
    """Component weights (given and normalised), aggregation, penalties, step rewards."""
    reward = recipe.reward
    normalised = normalised_weights(recipe)
    given = {name: getattr(reward, name) for name in REWARD_COMPONENTS}
    return {
        "components": list(REWARD_COMPONENTS),
        "weights": given,
        "normalised_weights": normalised,
        "aggregate": reward.aggregate,
        # What the trainer multiplies each component by: the recipe's own weights for
        # `sum`, the normalised ones for `normalized`.
        "trainer_weights": [given[n] if reward.aggregate == "sum" else normalised[n]
                            for n in REWARD_COMPONENTS],
        "penalties": {name: value for name, value in reward.penalties},
        "step_rewards": reward.step_rewards,
        # R_judge's llm judge (runtime.rewards.judge.make_llm_judge) and how often it is asked.
        "judge_llm": _resolve_judge(recipe, reward.judge_llm) if reward.judge_llm else None,
        "judge_every": reward.judge_every,
    }
