"""Where the synthetic teacher writes schema discovery, and the call it writes.

A real teacher looks the schema up when it has a reason to: the error of its last
attempt named a field or an entity the warehouse does not have, or it is about to
query an entity for the first time. The synthetic teacher (``teacher synthetic {
discovery SHARE }``) writes discovery by a fixed rule that a test can check:

- **repair**: a repair (``teacher { feedback N }``) after an ``UnknownFieldError`` or
  ``UnknownEntityError`` begins its CODE with ``api.describe("<view>")`` of the entity
  the failed code misused: the first logical view the error message names after the
  unknown name itself; for a field error that names none, the view of the failed
  query that has the field the message suggests, else the first view the failed query
  reads; for an entity error that names none, ``api.list_entities()``.
- **first_turn**: a seeded ``SHARE`` of the candidates for an instance's first question
  (the conversation so far is that one analyst message) begin their CODE with
  ``api.describe("<view>")`` of the first logical view the reference code reads.

The call goes in the same CODE block as the query, after a leading docstring: in the
agent loop a successful execution ends the user turn, so a describe-only block would
end it with the entity's fields as the answer. Evaluation counts these calls per turn
(``runtime.agent.count_discovery``).

Example:
    >>> fields = {"daily_stat": frozenset({"clicks", "cost"}), "campaign": frozenset({"name"})}
    >>> first_view('result = api.query("SELECT c.name AS campaign FROM daily_stat s JOIN campaign c ON true")', fields)
    'daily_stat'
    >>> repair_call("UnknownFieldError: unknown field `clicks_n`: did you mean `clicks`?",
    ...             'result = api.query("SELECT clicks_n FROM daily_stat")', fields)
    'api.describe("daily_stat")'
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from craftc.ir import Schema
from runtime.distill.code_facts import sql_strings

__all__ = ["Discovery", "RULES", "entity_fields", "describe_call", "first_view", "views_read", "repair_call",
           "with_discovery"]

RULES = ("first_turn", "repair")
_UNKNOWN_NAME = re.compile(r"\b(UnknownFieldError|UnknownEntityError)\b")
_BACKTICKED = re.compile(r"`([^`]+)`")
_API_READ = re.compile(r"\bapi\.(?:table|describe)\(\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")


@dataclass(frozen=True)
class Discovery:
    """A discovery call the teacher writes: the CODE line, the rule that chose it, a THINK line."""

    call: str
    rule: str
    note: str


def entity_fields(schema: Schema) -> dict[str, frozenset[str]]:
    """Each logical view's fields as ``api.describe`` lists them (key, ``<ref>_id``, fields); a
    history table's view of every version has the same fields."""
    out = {}
    for e in schema.entities:
        key = (e.key.name,) if e.key is not None else ()
        out[e.view] = frozenset({*key, *(f"{r.name}_id" for r in e.refs), *(f.name for f in e.fields)})
        if e.history is not None:
            out[e.history.view] = out[e.view]
    return out


def describe_call(view: str) -> str:
    return f'api.describe("{view}")'


def views_read(code: str, views) -> list[str]:
    """The logical views ``code`` reads, in source order: tables its SQL strings name
    (common table expressions excluded) and ``api.table("...")`` arguments."""
    found: list[tuple[int, str]] = []
    for literal in sql_strings(code):
        try:
            statements = [s for s in sqlglot.parse(literal.sql, read="duckdb") if s is not None]
        except sqlglot.errors.SqlglotError:
            continue
        for statement in statements:
            ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
            for table in statement.find_all(exp.Table):
                if table.name in views and table.name not in ctes:
                    # The parser's own offset: the name also occurs as a column alias
                    # (`c.name AS campaign`) before the FROM that reads it.
                    found.append((literal.start + table.this.meta.get("start", 0), table.name))
    found += [(m.start(), m.group(1)) for m in _API_READ.finditer(code) if m.group(1) in views]
    return list(dict.fromkeys(view for _, view in sorted(found)))


def first_view(code: str, views) -> str | None:
    """The first logical view ``code`` reads, or None when it reads none by name."""
    read = views_read(code, views)
    return read[0] if read else None


def repair_call(error: str, failed_code: str | None, fields: dict[str, frozenset[str]]) -> str | None:
    """The discovery call a repair after ``error`` begins with; None when the error names no unknown name.

    Args:
        error: What the teacher was shown (``UnknownFieldError: unknown field ...``).
        failed_code: The CODE that failed, when it could be read.
        fields: Each logical view's fields (:func:`entity_fields`).
    """
    kind = _UNKNOWN_NAME.search(error)
    if kind is None:
        return None
    # The message's first backticked name is the unknown one; the views after it are
    # where the API points (`of `campaign``, `did you mean `campaign``, `the logical view ...`).
    named = _BACKTICKED.findall(error[kind.end():])[1:]
    for name in named:
        if name in fields:
            return describe_call(name)
    if kind.group(1) == "UnknownEntityError":
        return "api.list_entities()"
    read = views_read(failed_code or "", fields)
    suggested = set(named)
    for view in read:
        if suggested & fields[view]:
            return describe_call(view)
    return describe_call(read[0]) if read else None


def with_discovery(code: str, call: str) -> str:
    """``code`` with ``call`` as its first statement, after a leading docstring.

    Example:
        >>> print(with_discovery('\"\"\"Top campaigns.\"\"\"\\nresult = 1\\n', 'api.describe("campaign")'))
        \"\"\"Top campaigns.\"\"\"
        api.describe("campaign")
        result = 1
        <BLANKLINE>
    """
    try:
        body = ast.parse(code).body
    except SyntaxError:
        body = []
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines = code.splitlines(keepends=True)
        head = "".join(lines[:first.end_lineno])
        return head + ("" if head.endswith("\n") else "\n") + call + "\n" + "".join(lines[first.end_lineno:])
    return f"{call}\n{code}"
