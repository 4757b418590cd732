"""What a piece of agent code touches: SQL strings, views, columns, aggregates, literals.

Judges compare these facts with the PLAN and the params; the synthetic noise model
uses the SQL strings' positions to corrupt them. Code is parsed with ``ast`` (never
executed) and each SQL string passed to ``api`` is parsed with sqlglot's DuckDB
dialect.

Example:
    >>> facts = code_facts('result = api.query("SELECT sum(clicks) AS c FROM daily_stat")')
    >>> sorted(facts.tables), sorted(facts.columns), sorted(facts.aggregates)
    (['daily_stat'], ['clicks'], ['sum'])
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

__all__ = ["CodeFacts", "SqlString", "code_facts", "sql_strings"]

_SQL_CALLS = {"query", "sql", "execute", "run_sql", "fetch"}
_PANDAS_AGGREGATES = {"sum", "mean", "count", "nunique", "max", "min", "median", "size"}
_PLACEHOLDER = "__param__"
_LOOKS_LIKE_SQL = re.compile(r"\s*(SELECT|WITH)\s", re.I)


@dataclass(frozen=True)
class SqlString:
    """One SQL string literal in the code and where its source text sits."""

    sql: str
    start: int            # character offsets of the literal's source segment in the code
    end: int


@dataclass
class CodeFacts:
    """Everything the judges need to know about one CODE block."""

    parsed: bool = True
    problems: list[str] = field(default_factory=list)
    sql: list[str] = field(default_factory=list)
    tables: set[str] = field(default_factory=set)
    columns: set[str] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    literals: set[str] = field(default_factory=set)       # every constant, as text
    identifiers: set[str] = field(default_factory=set)    # python names, attributes, string keys
    param_reads: set[str] = field(default_factory=set)    # keys read as params["..."]


def _offsets(code: str) -> list[int]:
    starts, total = [], 0
    for line in code.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    return starts


def _string_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                parts.append(_PLACEHOLDER)
        return "".join(parts)
    return None


def _is_sql_call(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr in _SQL_CALLS


def _sql_nodes(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """String nodes holding SQL: first arguments of ``api.query(...)``-style calls, and
    strings that read as a query (solutions often write ``sql = \"\"\"SELECT ...\"\"\"``)."""
    found: dict[int, tuple[ast.AST, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_sql_call(node) and node.args:
            text = _string_of(node.args[0])
            if text is not None:
                found[id(node.args[0])] = (node.args[0], text)
        elif isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in found:
            text = _string_of(node)
            if text is not None and _LOOKS_LIKE_SQL.match(text):
                found[id(node)] = (node, text)
    return list(found.values())


def sql_strings(code: str) -> list[SqlString]:
    """The SQL string literals passed to ``api.query(...)``-style calls, in source order."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    starts, lines = _offsets(code), code.splitlines(keepends=True)

    def char_offset(lineno: int, byte_col: int) -> int:
        # ast columns count UTF-8 bytes; string slicing counts characters.
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:byte_col].decode(errors="ignore"))

    found = []
    for arg, text in _sql_nodes(tree):
        if arg.end_lineno is None:
            continue
        found.append(SqlString(text, char_offset(arg.lineno, arg.col_offset),
                               char_offset(arg.end_lineno, arg.end_col_offset)))
    return sorted(found, key=lambda s: s.start)


def _collect_sql(sql: str, facts: CodeFacts) -> None:
    try:
        statements = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.SqlglotError as err:
        facts.problems.append(f"SQL does not parse: {str(err).splitlines()[0]}")
        return
    for statement in statements:
        if statement is None:
            continue
        for table in statement.find_all(exp.Table):
            facts.tables.add(table.name.lower())
        for column in statement.find_all(exp.Column):
            facts.columns.add(column.name.lower())
        for alias in statement.find_all(exp.Alias):
            facts.identifiers.add(alias.alias.lower())
        for agg in statement.find_all(exp.AggFunc):
            facts.aggregates.add(type(agg).__name__.lower())
        for literal in statement.find_all(exp.Literal):
            facts.literals.add(literal.this)


def _collect_python(tree: ast.AST, sql_nodes: set[int], facts: CodeFacts) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in sql_nodes:
            if isinstance(node.value, (str, int, float)) and not isinstance(node.value, bool):
                facts.literals.add(str(node.value))
                if isinstance(node.value, str):
                    facts.identifiers.add(node.value.lower())
        elif isinstance(node, ast.Attribute):
            facts.identifiers.add(node.attr.lower())
            if node.attr in _PANDAS_AGGREGATES:
                facts.aggregates.add("avg" if node.attr == "mean" else node.attr)
        elif isinstance(node, ast.Name):
            facts.identifiers.add(node.id.lower())
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "params":
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                facts.param_reads.add(key.value)


def code_facts(code: str) -> CodeFacts:
    """Parse a CODE block and collect its SQL and Python facts (never raises)."""
    facts = CodeFacts()
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        facts.parsed = False
        facts.problems.append(f"the code does not parse: {err.msg} (line {err.lineno})")
        return facts
    sql_nodes: set[int] = set()
    for node, text in _sql_nodes(tree):
        sql_nodes.update(id(part) for part in ast.walk(node))
        facts.sql.append(text)
        _collect_sql(text, facts)
    _collect_python(tree, sql_nodes, facts)
    return facts
