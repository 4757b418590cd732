"""The context-length budget: an estimate of the stuffed prompt's size in tokens.

Tokens are counted with :func:`craftc.tokens.estimate_tokens` (words plus punctuation
marks), the same estimator as the plan's ``token_budget.json``, over the stuffed system
prompt exactly as emit renders it (task text, API docs, logical DDL), so this check and
``token_budget.json`` always agree. Real tokenizers split identifiers further, so real
counts are usually higher.
"""

from __future__ import annotations

from craftc.emit.binding_sql import logical_ddl
from craftc.emit.prompts import system_prompt
from craftc.ir import Recipe
from craftc.tokens import estimate_tokens

__all__ = ["estimate_tokens", "stuffed_prompt_estimate"]


def stuffed_prompt_estimate(recipe: Recipe) -> int:
    """Estimated tokens of the stuffed system prompt of ``recipe``."""
    return estimate_tokens(system_prompt(recipe, "stuffed", logical_ddl(recipe.schema_)))
