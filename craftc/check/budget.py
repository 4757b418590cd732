"""The context-length budget: an estimate of the stuffed prompt's size in tokens.

Tokens are counted with :func:`craftc.tokens.estimate_tokens` (words plus punctuation
marks), the same estimator as the plan's ``token_budget.json``, over the stuffed system
prompt exactly as emit renders it (logical DDL, API docs, task text). Should that
rendering be unavailable, a plain stand-in with the same parts is counted instead.
Real tokenizers split identifiers further, so real counts are usually higher.
"""

from __future__ import annotations

from craftc.ir import Recipe, Schema
from craftc.tokens import estimate_tokens

__all__ = ["estimate_tokens", "stuffed_prompt_text", "stuffed_prompt_estimate", "TASK_TEXT"]

TASK_TEXT = """You are a data agent for an analytics warehouse. Answer each question with
<THINK>reasoning</THINK>, then <PLAN>the business-level plan</PLAN>, then <CODE>Python that
calls api and assigns result</CODE>. Tools: run_code(code), list_entities(),
describe_entity(name). When the result is right, answer with <ANSWER>...</ANSWER>."""

API_TEXT = """api.query(sql) -> pandas.DataFrame: run SQL over the logical views.
api.list_entities() -> list[str]; api.describe(entity) -> fields, types and docs.
params holds the question's parameters; pd is pandas; assign the answer to result."""


def stuffed_prompt_text(schema: Schema) -> str:
    """A stand-in for the stuffed system prompt: task, API docs and logical DDL."""
    parts = [TASK_TEXT, API_TEXT]
    for e in schema.entities:
        cols = [f"  {e.key.name} BIGINT PRIMARY KEY"]
        cols += [f"  {r.name}_id BIGINT REFERENCES {r.target}  -- {r.doc}" for r in e.refs]
        cols += [f"  {f.name} {f.type.kind.upper()}  -- {f.doc}" for f in e.fields]
        parts.append(f"-- {e.doc}\nCREATE VIEW {e.view} (\n" + ",\n".join(cols) + "\n);")
    parts += [f"-- metric {m.name}: {m.doc}\n--   {m.sql}" for m in schema.metrics]
    return "\n\n".join(parts)


def stuffed_prompt_estimate(recipe: Recipe) -> int:
    """Estimated tokens of the stuffed system prompt of ``recipe``."""
    try:
        # Emit renders the real prompt; counting it keeps this check and
        # token_budget.json in agreement. Imported here: only stuffed inputs need it.
        from craftc.emit.binding_sql import logical_ddl
        from craftc.emit.prompts import render_prompts

        text = render_prompts(recipe, logical_ddl(recipe.schema_))["prompts/system_stuffed.md"]
    except Exception:  # noqa: BLE001 - any failure there falls back to the stand-in
        text = stuffed_prompt_text(recipe.schema_)
    return estimate_tokens(text)
