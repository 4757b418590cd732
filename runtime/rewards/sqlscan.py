"""Finding the SQL inside agent code and reading it with sqlglot.

Agent code passes SQL to the warehouse API as string literals (plain or
f-strings); the process reward and the coherence metric both need those queries
parsed. Unparseable code or SQL yields nothing rather than an error: the reward
for broken code comes from the execution, not from here.
"""

from __future__ import annotations

import ast
import re

import sqlglot
from sqlglot import exp

__all__ = ["sql_strings", "parse_queries", "literal_values"]

_SQL_START = re.compile(r"^\s*(select|with)\b", re.I)


def _string_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        # An interpolated value stands in as a literal so the query still parses.
        return "".join(v.value if isinstance(v, ast.Constant) else "0" for v in node.values)
    return None


def sql_strings(code: str) -> list[str]:
    """String literals in ``code`` that look like queries, in source order.

    Example:
        >>> sql_strings("x = 1\\nresult = api.query('SELECT a FROM t')")
        ['SELECT a FROM t']
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        text = _string_of(node)
        if text and _SQL_START.match(text):
            found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), text))
    return [text for _, _, text in sorted(found)]


def parse_queries(code: str) -> list[exp.Expression]:
    """Every query in ``code`` that sqlglot (DuckDB dialect) can parse."""
    parsed = []
    for text in sql_strings(code):
        try:
            tree = sqlglot.parse_one(text, read="duckdb")
        except sqlglot.errors.SqlglotError:
            continue
        if tree is not None:
            parsed.append(tree)
    return parsed


def literal_values(code: str) -> set[str]:
    """Literal values the code filters or compares on: Python constants and SQL literals.

    Numbers are normalised (``7`` and ``7.0`` both give ``"7"``) so that a value
    written differently still counts as the same constraint.
    """
    values: set[str] = set()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return values
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and not isinstance(side.value, bool):
                    values.add(_norm(side.value))
    for query in parse_queries(code):
        for where in query.find_all(exp.Where, exp.Having):
            for lit in where.find_all(exp.Literal):
                values.add(_norm(lit.this if lit.is_string else lit.this))
    return values


def _norm(value) -> str:
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else repr(number)
