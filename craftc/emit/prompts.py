"""System prompts (stripped and stuffed) and the turn template.

Both system prompts come from the same task template, so the only difference between
the CRAFT input and the schema-stuffed baseline is the schema and API section the
stuffed one appends: the token budget compares like with like. With ``stripped_prompt
compact`` the stripped prompt is three lines instead (the warehouse, the block tags, the
tool calls as the code writes them), for a model that is trained to carry the rest; the
stuffed prompt, the control, stays the full one.
"""

from __future__ import annotations

from craftc.emit.render import render_template
from craftc.ir import TOOL_KINDS, Recipe, Tool

__all__ = ["DEFAULT_TOOLS", "TOOL_CALLS", "prompt_tools", "system_prompt", "render_prompts", "render_judge_prompts",
           "llm_judges_in_use", "judge_prompt_path", "split_turn_template"]

# Lowering gives every recipe its tools (the three kinds when it declares none); this is
# for a Recipe built without lowering.
DEFAULT_TOOLS = tuple(Tool(name=kind, kind=kind) for kind in TOOL_KINDS)

# How the agent's code invokes each tool kind, and what the prompt says of it when the
# recipe's `doc` is empty. The calls are spelt as the code writes them: a model that
# reads `describe_entity` would not know to write `api.describe(...)`.
TOOL_CALLS = {
    "run_code": ("the <{code}> block", "Python run in the sandbox"),
    "list_entities": ("`api.list_entities()`", "lists the entities: view, entity, doc"),
    "describe_entity": ("`api.describe(entity)`", "one entity's fields: field, type, doc, nullable, references"),
}


def prompt_tools(recipe: Recipe) -> list[dict[str, str]]:
    """The recipe's tools as the prompts list them: ``call``, ``name`` and ``doc``.

    ``doc`` is the recipe's, or the kind's own when the recipe gives none.

    Example:
        >>> from craftc.ir import Schema
        >>> recipe = Recipe(name="r", schema=Schema(name="s", version=1, source="s"))
        >>> prompt_tools(recipe)[2]["call"]
        '`api.describe(entity)`'
    """
    out = []
    for tool in recipe.tools or DEFAULT_TOOLS:
        call, doc = TOOL_CALLS[tool.kind]
        out.append({"call": call.format(code=recipe.format.code), "name": tool.name, "kind": tool.kind,
                    "doc": tool.doc or doc})
    return out


def _prompt_context(recipe: Recipe, logical_ddl: str) -> dict:
    return {
        "schema": recipe.schema_,
        "format": recipe.format,
        "tools": prompt_tools(recipe),
        "metrics": recipe.schema_.metrics,
        "logical_ddl": logical_ddl,
    }


def system_prompt(recipe: Recipe, mode: str, logical_ddl: str) -> str:
    """The ``stripped`` or ``stuffed`` system prompt of ``recipe``, as ``prompts/`` holds it.

    The context-budget check counts the stuffed one; it renders the same template
    emission writes, so the check and ``token_budget.json`` cannot disagree.
    """
    template = "compact" if mode == "stripped" and recipe.stripped_prompt == "compact" else mode
    return render_template(f"prompts/system_{template}.md.j2", **_prompt_context(recipe, logical_ddl))


def render_prompts(recipe: Recipe, logical_ddl: str) -> dict[str, str]:
    """Render ``prompts/*.md`` for ``recipe``.

    Args:
        recipe: The resolved recipe.
        logical_ddl: The logical schema DDL (what the stuffed prompt shows).

    Returns:
        Plan-relative path -> text.
    """
    return {
        "prompts/system_stripped.md": system_prompt(recipe, "stripped", logical_ddl),
        "prompts/system_stuffed.md": system_prompt(recipe, "stuffed", logical_ddl),
        "prompts/turn.md": render_template("prompts/turn.md.j2", **_prompt_context(recipe, logical_ddl)),
    }


def judge_prompt_path(name: str) -> str:
    """Where an llm judge's prompt lives in the plan dir."""
    return f"prompts/judges/{name}.md"


def llm_judges_in_use(recipe: Recipe) -> list:
    """The llm judges the judge gate or R_judge asks, in declaration order.

    A declared judge that nothing asks gets no prompt: the plan holds only what a step reads.
    """
    wanted = set(recipe.gates.judge.judges) if "judge" in recipe.gates.order else set()
    if recipe.reward.judge_llm:
        wanted.add(recipe.reward.judge_llm)
    return [j for j in recipe.judges if j.kind == "llm" and j.name in wanted]


def render_judge_prompts(recipe: Recipe) -> dict[str, str]:
    """``prompts/judges/<name>.md`` for every llm judge in use.

    Each file has a ``## system`` and a ``## user`` section; the user section holds
    ``$ask``, ``$params``, ``$plan`` and ``$code``, which the runtime fills per candidate
    (``string.Template``, so the JSON in the reply instructions needs no escaping).
    """
    return {judge_prompt_path(judge.name): render_template(
                f"prompts/judges/{judge.judgement}.md.j2", schema=recipe.schema_, format=recipe.format,
                rubric=judge.rubric, metrics=[m.name for m in recipe.schema_.metrics])
            for judge in llm_judges_in_use(recipe)}


def split_turn_template(text: str) -> dict[str, str]:
    """Split ``prompts/turn.md`` into its ``## <role>`` sections.

    Each section (heading excluded, surrounding blank lines stripped) is a
    ``str.format`` template: ``{ask}`` for the user turn, ``{output}`` for the tool turn.

    Example:
        >>> split_turn_template("## user\\n{ask}\\n\\n## tool\\nOut:\\n{output}\\n")
        {'user': '{ask}', 'tool': 'Out:\\n{output}'}
    """
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {role: "\n".join(lines).strip("\n") for role, lines in sections.items()}
