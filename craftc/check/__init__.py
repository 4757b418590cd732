"""Semantic checks: each module reports one family of problems to a DiagnosticSink.

``check_schema`` runs on a schema declaration; ``check_recipe`` on a recipe's syntax
and its lowered IR. Checks never raise for user errors and index names in dicts, so
they stay linear in the size of the recipe.
"""

from __future__ import annotations

from craftc.check.budget import estimate_tokens, stuffed_prompt_estimate
from craftc.check.config import check_config
from craftc.check.schema import check_schema
from craftc.check.stages import check_stages
from craftc.check.workflows import check_workflows

__all__ = [
    "check_schema", "check_recipe", "check_workflows", "check_config", "check_stages",
    "estimate_tokens", "stuffed_prompt_estimate",
]


def check_recipe(decl, recipe, ctx, sink, sources, workflows: bool = True) -> None:
    """All recipe-level checks (workflows can be skipped when re-checking a profile)."""
    if workflows:
        check_workflows(decl, recipe.schema_, ctx.recipe_dir, sink, sources)
    check_config(decl, recipe, sink)
    from craftc.check.budget import solution_texts

    check_stages(decl, recipe, sink, solution_texts(getattr(ctx, "solution_sources", {}) or {}))
