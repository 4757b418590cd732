"""The recipe's training stages, as the steps that run them look them up."""

from __future__ import annotations

from craftc.ir import Recipe, Stage
from runtime.step_context import StepError

__all__ = ["sft_stage", "grpo_stage"]


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
