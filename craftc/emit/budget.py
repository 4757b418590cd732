"""The token budget: what stripping the schema saves, per system prompt and per turn.

Counts come from :func:`craftc.tokens.estimate_tokens`, the same estimator the
checker's context-budget check uses.
"""

from __future__ import annotations

from craftc.ir import Recipe
from craftc.tokens import estimate_tokens

__all__ = ["token_budget"]


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def token_budget(recipe: Recipe, prompts: dict[str, str], turn_sections: dict[str, str]) -> dict:
    """Estimated input tokens of the stripped and stuffed inputs, overall and per workflow.

    Args:
        recipe: The resolved recipe.
        prompts: The rendered ``prompts/*.md`` (path -> text).
        turn_sections: The user/tool turn templates of ``prompts/turn.md``.

    Returns:
        ``system`` (stripped, stuffed, ratio) and ``workflows``: for each workflow, each
        turn's first-phrasing user tokens and the first model call's input tokens in
        both modes. Template slots are counted as written (``{n}``), not as values.
    """
    stripped = estimate_tokens(prompts["prompts/system_stripped.md"])
    stuffed = estimate_tokens(prompts["prompts/system_stuffed.md"])
    user_template = turn_sections.get("user", "{ask}")
    workflows = {}
    for workflow in recipe.workflows:
        turns = [estimate_tokens(user_template.replace("{ask}", turn.asks[0])) for turn in workflow.turns]
        first = turns[0] if turns else 0
        workflows[workflow.name] = {
            "user_turns": turns,
            "first_call_stripped": stripped + first,
            "first_call_stuffed": stuffed + first,
            "ratio": _ratio(stripped + first, stuffed + first),
        }
    contexts = {model.name: model.context for model in recipe.models}
    return {
        "estimator": "craftc.tokens.estimate_tokens",
        "system": {"stripped": stripped, "stuffed": stuffed, "ratio": _ratio(stripped, stuffed),
                   "saved": stuffed - stripped},
        "workflows": workflows,
        "model_context": contexts,
    }
