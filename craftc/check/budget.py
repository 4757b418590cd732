"""The context-length budget: an estimate of the stuffed prompt's size in tokens.

The estimate counts words and punctuation marks (``\\w+|[^\\w\\s]``) of a stand-in for
the stuffed system prompt: the task and format text, the API docs and the logical
DDL of every entity. Real tokenizers split identifiers further, so real counts are
usually higher: the check errs on the side of letting a recipe through, and says so.
"""

from __future__ import annotations

import re

from craftc.ir import Schema

__all__ = ["estimate_tokens", "stuffed_prompt_text", "stuffed_prompt_estimate", "TASK_TEXT"]

_TOKEN = re.compile(r"\w+|[^\w\s]")

TASK_TEXT = """You are a data agent for an analytics warehouse. Answer each question with
<THINK>reasoning</THINK>, then <PLAN>the business-level plan</PLAN>, then <CODE>Python that
calls api and assigns result</CODE>. Tools: run_code(code), list_entities(),
describe_entity(name). When the result is right, answer with <ANSWER>...</ANSWER>."""

API_TEXT = """api.query(sql) -> pandas.DataFrame: run SQL over the logical views.
api.list_entities() -> list[str]; api.describe(entity) -> fields, types and docs.
params holds the question's parameters; pd is pandas; assign the answer to result."""


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: words plus punctuation marks.

    Example:
        >>> estimate_tokens("SELECT a, b FROM t;")
        7
    """
    return len(_TOKEN.findall(text))


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


def stuffed_prompt_estimate(schema: Schema) -> int:
    return estimate_tokens(stuffed_prompt_text(schema))
