"""What a reference solution reads from the warehouse: logical views and their columns.

A solution is a template (``${param}`` placeholders, see docs/workflows.md), so it is
rendered with placeholder literals before its SQL strings (the rule every reader of
agent code shares, see :mod:`craftc.sql_facts`) and its ``api.table("...", columns=[...])``
calls are found; each query's SQL is parsed with sqlglot (duckdb dialect) and every column is resolved against the table it comes from, an
unqualified column against the innermost SELECT's own tables first (SQL's scoping
rule), then the enclosing ones. Only references that name a logical view are judged;
CTEs, subqueries and select aliases are followed or skipped, never guessed, so a
finding is always a real miss. Column subscripts of a frame that ``api.table``
returned (``df["nope"]``) are reads of that view's columns too (see
:mod:`craftc.check.solution_frames`).

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
from typing import TYPE_CHECKING

from craftc.check import read_cache
from craftc.check.solution_frames import FrameMiss, frame_misses, frame_reads
from craftc.check.solution_parse import Read, parse_solution, parse_sql, render_solution
from craftc.sql_facts import PLACEHOLDER, sql_strings, table_calls

if TYPE_CHECKING:       # sqlglot is imported only when a solution is not in the read cache
    from sqlglot.optimizer.scope import Scope

__all__ = ["Read", "solution_reads", "missing_reads", "frame_column_misses", "schema_views",
           "parse_solution", "SqlProblem", "sql_problems", "solution_sql_problems", "duckdb_function_names"]


def schema_views(entities) -> dict[str, set[str]]:
    """Logical view -> columns (key, fields, ``<ref>_id``) for IR entities or plan.json dicts;
    a history table's view of every version (``<view>_history``) has the same columns."""
    views = {}
    for e in entities:
        get = (lambda obj, key: obj.get(key)) if isinstance(e, dict) else getattr
        key = get(e, "key")
        cols = ({get(key, "name")} if key is not None else set()) | {get(f, "name") for f in get(e, "fields")}
        cols |= {f"{get(r, 'name')}_id" for r in get(e, "refs")}
        views[get(e, "view")] = cols
        if get(e, "history") is not None:
            views[get(get(e, "history"), "view")] = cols
    return views


def _queries(text: str) -> list[tuple[str, str, int]]:
    """(kind, argument, line) for each SQL string (see `craftc.sql_facts`) and ``api.table`` call."""
    tree = parse_solution(text)
    if tree is None:
        return []
    rendered = render_solution(text)
    found = [("query", s.sql, s.line) for s in sql_strings(rendered, tree)]
    found += [("table", view, line) for view, line in table_calls(tree)]
    return sorted(found, key=lambda q: q[2])


@dataclass(frozen=True)
class SqlProblem:
    """A query that DuckDB would refuse before reading any data: bad syntax, an unknown function."""

    kind: str          # "syntax" or "function"
    message: str
    line: int
    col: int = 1
    name: str = ""     # the unknown function


@lru_cache(maxsize=1)
def duckdb_function_names() -> frozenset[str]:
    """Every function and macro name of DuckDB's catalog (an in-memory database, no data)."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        names = con.execute("SELECT DISTINCT lower(function_name) FROM duckdb_functions()").fetchall()
    finally:
        con.close()
    return frozenset(n for (n,) in names)


def _sql_problems(sql: str, line: int) -> list[SqlProblem]:
    from sqlglot import exp

    from craftc.sql_facts import sql_error

    error = sql_error(sql)
    if error is not None:
        found = re.search(r"Line (\d+), Col: (\d+)", error)
        at_line = line + (int(found.group(1)) - 1 if found else 0)
        message = re.sub(r"\.?\s*Line \d+, Col: \d+\.?", "", error).strip().rstrip(".")
        return [SqlProblem("syntax", message, at_line)]
    tree = parse_sql(sql)
    if tree is None:
        return []
    known = duckdb_function_names()
    out = []
    for call in tree.find_all(exp.Anonymous):
        name = str(call.name)
        if name and PLACEHOLDER not in name and name.lower() not in known:
            out.append(SqlProblem("function", f"DuckDB has no function `{name}`",
                                  line + _line_offset(sql, name), name=name))
    return out


def sql_problems(text: str) -> list[SqlProblem]:
    """Syntax errors and unknown functions in a solution's SQL, placed in the solution file."""
    lines = text.splitlines()
    out = []
    for kind, arg, line in _queries(text):
        if kind != "query":
            continue
        for p in _sql_problems(arg, line):
            if p.name and 1 <= p.line <= len(lines):
                found = re.search(rf"\b{re.escape(p.name)}\s*\(", lines[p.line - 1])
                p = SqlProblem(p.kind, p.message, p.line, found.start() + 1 if found else 1, p.name)
            elif 1 <= p.line <= len(lines):
                p = SqlProblem(p.kind, p.message, p.line, len(lines[p.line - 1]) - len(lines[p.line - 1].lstrip()) + 1)
            out.append(p)
    return out


def _select_aliases(scope: Scope) -> set[str]:
    from sqlglot import exp

    select = scope.expression
    return set(select.named_selects) if isinstance(select, exp.Select) else set()


def _derived_columns(scope: Scope) -> set[str]:
    from sqlglot import exp
    from sqlglot.optimizer.scope import Scope

    names = set()
    for source in scope.sources.values():
        if isinstance(source, Scope) and isinstance(source.expression, exp.Query):
            names |= set(source.expression.named_selects)
    return names


def _tables(scope: Scope) -> dict[str, str]:
    from sqlglot import exp

    return {alias: src.name for alias, src in scope.sources.items() if isinstance(src, exp.Table)
            and PLACEHOLDER not in src.name}


def _own_columns(scope: Scope) -> list[exp.Column]:
    """The columns written in this SELECT itself, not in a subquery nested in it.

    sqlglot lists an ``IN (SELECT ...)`` subquery's columns in the outer scope too (they
    could be correlated); they belong to the subquery's own scope, which resolves them.
    """
    from sqlglot import exp

    own = scope.expression
    return [c for c in scope.columns if c.find_ancestor(exp.Query) in (own, None)]


def _outer_owner(scope: Scope, name: str, views: dict[str, set[str]]) -> str | None:
    """The view of an enclosing SELECT that holds ``name`` (a correlated reference)."""
    parent = scope.parent
    while parent is not None:
        for view in _tables(parent).values():
            if name in views.get(view, ()):
                return view
        parent = parent.parent
    return None


def _scope_reads(scope: Scope, views: dict[str, set[str]], line: int) -> list[Read]:
    tables = _tables(scope)
    reads = [Read(name, "", line) for name in tables.values()]
    known = {alias: name for alias, name in tables.items() if name in views}
    for col in _own_columns(scope):
        if PLACEHOLDER in col.name:
            continue        # an f-string interpolation: its name is not known
        if col.table:
            if col.table in known:
                reads.append(Read(known[col.table], col.name, line))
            continue
        if col.name in _select_aliases(scope) or col.name in _derived_columns(scope):
            continue
        owners = [name for name in known.values() if col.name in views[name]]
        outer = None if owners else _outer_owner(scope, col.name, views)
        if owners or outer:
            reads.append(Read(owners[0] if owners else outer, col.name, line))
        elif len(known) == 1 and len(tables) == len(scope.sources):
            reads.append(Read(next(iter(known.values())), col.name, line))
    return reads


def _sql_reads(sql: str, line: int, views: dict[str, set[str]]) -> list[Read]:
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.scope import traverse_scope

    tree = parse_sql(sql)
    if tree is None:
        return []
    try:
        scopes = traverse_scope(tree)
    except (SqlglotError, ValueError, RecursionError):
        return []
    reads = [read for scope in scopes for read in _scope_reads(scope, views, line)]
    return [Read(r.view, r.column, line + _line_offset(sql, r.column or r.view)) for r in reads]


def _line_offset(sql: str, name: str) -> int:
    """Lines between the start of the query string and the first use of ``name`` in it."""
    found = re.search(rf"\b{re.escape(name)}\b", sql)
    return sql.count("\n", 0, found.start()) if found else 0


@lru_cache(maxsize=8)
def _views_of(key: tuple) -> dict[str, set[str]]:
    return {view: set(cols) for view, cols in key}


@lru_cache(maxsize=512)
def _findings(text: str, views_key: tuple) -> tuple[tuple[Read, ...], tuple, tuple]:
    """(reads, frame misses, SQL problems) of one solution, from the disk cache when it has them."""
    digest = read_cache.views_digest(views_key)
    cached = read_cache.lookup(text, digest)
    if cached is not None:
        try:
            return (tuple(Read(*r) for r in cached["reads"]),
                    tuple(FrameMiss(*m[:5], tuple(m[5])) for m in cached["misses"]),
                    tuple(SqlProblem(*p) for p in cached["sql"]))
        except (KeyError, TypeError):
            pass
    found = _compute_findings(text, _views_of(views_key))
    read_cache.store(text, digest, {"reads": [list(vars(r).values()) for r in found[0]],
                                    "misses": [list(vars(m).values()) for m in found[1]],
                                    "sql": [list(vars(p).values()) for p in found[2]]})
    return found


def _compute_findings(text: str, views: dict[str, set[str]]) -> tuple[tuple[Read, ...], tuple, tuple]:
    tree = parse_solution(text)
    reads: list[Read] = []
    for kind, arg, line in _queries(text):
        reads += [Read(arg, "", line)] if kind == "table" else _sql_reads(arg, line, views)
    reads += frame_reads(tree, views)
    lines = text.splitlines()
    placed = [_placed(r, lines) for r in sorted(reads, key=lambda r: r.line)]
    return tuple(dict.fromkeys(placed)), tuple(frame_misses(tree, views)), tuple(sql_problems(text))


def _reads_cached(text: str, views_key: tuple) -> tuple[Read, ...]:
    return _findings(text, views_key)[0]


def _placed(read: Read, lines: list[str]) -> Read:
    """The read with the column of its line where the name first appears."""
    if read.col != 1 or not 1 <= read.line <= len(lines):
        return read
    name = read.column or read.view
    found = re.search(rf"\.{re.escape(name)}\b", lines[read.line - 1]) or \
        re.search(rf"\b{re.escape(name)}\b", lines[read.line - 1])
    if found is None:
        return read
    start = found.start() + (found.group().startswith("."))
    return Read(read.view, read.column, read.line, start + 1)


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



def frame_column_misses(text: str, views: dict[str, set[str]], key: tuple | None = None) -> list:
    """Subscripts of ``api.query`` frames that name a column the query does not return."""
    return list(_findings(text, key if key is not None else _key(views))[1])


def solution_sql_problems(text: str, views: dict[str, set[str]], key: tuple | None = None) -> list[SqlProblem]:
    """SQL of the solution that does not parse (DuckDB dialect) or calls a function DuckDB lacks."""
    return list(_findings(text, key if key is not None else _key(views))[2])
