"""The recipe's training stages, as the steps that run them look them up."""

from __future__ import annotations

from craftc.ir import Recipe, Stage
from runtime.step_context import StepError

__all__ = ["sft_stage", "grpo_stage", "replicate_seeds"]


def _stage(recipe: Recipe, kind: str, example: str) -> Stage:
    for stage in recipe.stages:
        if stage.kind == kind:
            return stage
    raise StepError(f"recipe `{recipe.name}` has no stage of kind {kind}; add `{example}` to the recipe")


def sft_stage(recipe: Recipe) -> Stage:
    """The recipe's (first) SFT stage."""
    return _stage(recipe, "sft", "stage sft { base tiny_moe }")


def grpo_stage(recipe: Recipe) -> Stage:
    """The recipe's (first) GRPO stage."""
    return _stage(recipe, "grpo", "stage grpo { from sft }")


def replicate_seeds(trl_kwargs: dict, seed: int) -> dict:
    """The TRL seeds a training replicate (`craftc run --replicates N`) trains with: its own seed
    for the weights' initialisation and sampling and, where the plan sets `data_seed`, for which
    rows train and in what order too. Without the second, a full fine-tuning of a pretrained
    model (no initialisation, no dropout) would train every replicate identically.

    >>> replicate_seeds({"seed": 2027, "data_seed": 2027}, 2028)
    {'seed': 2028, 'data_seed': 2028}
    >>> replicate_seeds({"seed": 2027}, 2028), replicate_seeds({"seed": 2027, "data_seed": 2027}, 2027)
    ({'seed': 2028}, {})
    """
    if seed == trl_kwargs.get("seed", seed):
        return {}
    return {"seed": seed, **({"data_seed": seed} if trl_kwargs.get("data_seed") is not None else {})}
