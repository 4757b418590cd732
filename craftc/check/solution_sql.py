"""What a reference solution reads from the warehouse: logical views and their columns.

A solution is a template (``${param}`` placeholders, see docs/workflows.md), so it is
rendered with placeholder literals before ``ast`` finds its ``api.query("...")`` and
``api.table("...")`` calls; each query's SQL is parsed with sqlglot (duckdb dialect)
and every column is resolved against the table it comes from. Only references that
name a logical view are judged; CTEs, subqueries and select aliases are followed or
skipped, never guessed, so a finding is always a real miss.

Example:
    >>> views = {"campaign": {"id", "name"}}
    >>> text = 'result = api.query("SELECT c.name, c.daily_budget FROM campaign c")\\n'
    >>> [(m.view, m.column) for m in missing_reads(text, views)]
    [('campaign', 'daily_budget')]
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

__all__ = ["Read", "solution_reads", "missing_reads", "schema_views"]

_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


@dataclass(frozen=True)
class Read:
    """One thing a solution reads: a view (``column`` empty) or a column of a view."""

    view: str
    column: str
    line: int          # line of the solution file where the query first names it


def schema_views(entities) -> dict[str, set[str]]:
    """Logical view -> columns (key, fields, ``<ref>_id``) for IR entities or plan.json dicts."""
    views = {}
    for e in entities:
        get = (lambda obj, key: obj[key]) if isinstance(e, dict) else getattr
        cols = {get(get(e, "key"), "name")} | {get(f, "name") for f in get(e, "fields")}
        cols |= {f"{get(r, 'name')}_id" for r in get(e, "refs")}
        views[get(e, "view")] = cols
    return views


def _queries(text: str) -> list[tuple[str, str, int]]:
    """(kind, argument, line) for each ``api.query``/``api.table`` call with a literal argument."""
    rendered = _PLACEHOLDER.sub("0", text.replace("$$", "$"))
    try:
        tree = ast.parse(rendered)
    except SyntaxError:
        return []          # the distill gates report broken solutions; nothing to resolve here
    constants = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = (node.value.value, node.value.lineno)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "api"
                and node.func.attr in ("query", "table") and node.args):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.append((node.func.attr, arg.value, arg.lineno))
        elif isinstance(arg, ast.Name) and arg.id in constants:
            found.append((node.func.attr, *constants[arg.id]))
    return sorted(found, key=lambda q: q[2])


def _select_aliases(scope: Scope) -> set[str]:
    select = scope.expression
    return set(select.named_selects) if isinstance(select, exp.Select) else set()


def _derived_columns(scope: Scope) -> set[str]:
    names = set()
    for source in scope.sources.values():
        if isinstance(source, Scope) and isinstance(source.expression, exp.Query):
            names |= set(source.expression.named_selects)
    return names


def _sql_reads(sql: str, line: int, views: dict[str, set[str]]) -> list[Read]:
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
        scopes = traverse_scope(tree)
    except (SqlglotError, ValueError, RecursionError):
        return []
    reads = []
    for scope in scopes:
        tables = {alias: src.name for alias, src in scope.sources.items() if isinstance(src, exp.Table)}
        reads += [Read(name, "", line) for name in tables.values()]
        known = {alias: name for alias, name in tables.items() if name in views}
        for col in scope.columns:
            if col.table:
                if col.table in known:
                    reads.append(Read(known[col.table], col.name, line))
                continue
            if col.name in _select_aliases(scope) or col.name in _derived_columns(scope):
                continue
            owners = [name for name in known.values() if col.name in views[name]]
            if owners:
                reads.append(Read(owners[0], col.name, line))
            elif len(known) == 1 and len(tables) == len(scope.sources):
                reads.append(Read(next(iter(known.values())), col.name, line))
    return [Read(r.view, r.column, line + _line_offset(sql, r.column or r.view)) for r in reads]


def _line_offset(sql: str, name: str) -> int:
    """Lines between the start of the query string and the first use of ``name`` in it."""
    found = re.search(rf"\b{re.escape(name)}\b", sql)
    return sql.count("\n", 0, found.start()) if found else 0


@lru_cache(maxsize=8)
def _views_of(key: tuple) -> dict[str, set[str]]:
    return {view: set(cols) for view, cols in key}


@lru_cache(maxsize=512)
def _reads_cached(text: str, views_key: tuple) -> tuple[Read, ...]:
    views = _views_of(views_key)
    reads: list[Read] = []
    for kind, arg, line in _queries(text):
        reads += [Read(arg, "", line)] if kind == "table" else _sql_reads(arg, line, views)
    return tuple(dict.fromkeys(reads))


def _key(views: dict[str, set[str]]) -> tuple:
    return tuple(sorted((view, tuple(sorted(cols))) for view, cols in views.items()))


def solution_reads(text: str, views: dict[str, set[str]], key: tuple | None = None) -> tuple[Read, ...]:
    """Every view and view column the solution's queries read, in file order, without repeats.

    A column is attributed to a view when it is qualified by that view's alias or when
    exactly one logical view of its query can hold it; unresolvable names are left out.
    ``key`` is ``views_key(views)``, computed once by a caller that checks many
    solutions (building it per solution would make checking quadratic in schema size).
    """
    return _reads_cached(text, key if key is not None else _key(views))


views_key = _key


def missing_reads(text: str, views: dict[str, set[str]], key: tuple | None = None) -> list[Read]:
    """Reads of views or view columns that ``views`` does not have (at most one per name).

    CTEs and subqueries are scopes of their own in sqlglot, never tables, so a name a
    query defines itself is never reported.
    """
    out, seen = [], set()
    for read in solution_reads(text, views, key):
        missing = read.view not in views if not read.column else read.column not in views.get(read.view, ())
        if missing and (read.view, read.column) not in seen:
            seen.add((read.view, read.column))
            out.append(read)
    return out

