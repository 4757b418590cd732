"""What a piece of agent code touches: SQL strings, views, columns, aggregates, literals.

Judges compare these facts with the PLAN and the params; the synthetic noise model
uses the SQL strings' positions to corrupt them. Which strings are SQL and what each
reads is `craftc.sql_facts`' to say (the same rule the rewards and the compiler's
solution checks use); this module adds what the Python around the SQL touches.

Example:
    >>> facts = code_facts('result = api.query("SELECT sum(clicks) AS c FROM daily_stat")')
    >>> sorted(facts.tables), sorted(facts.columns), sorted(facts.aggregates)
    (['daily_stat'], ['clicks'], ['sum'])
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from craftc.sql_facts import SqlString, query_facts, sql_error, sql_strings

__all__ = ["CodeFacts", "SqlString", "code_facts", "sql_strings"]

_PANDAS_AGGREGATES = {"sum", "mean", "count", "nunique", "max", "min", "median", "size"}


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


def _collect_sql(sql: str, facts: CodeFacts) -> None:
    error = sql_error(sql)
    if error is not None:
        facts.problems.append(f"SQL does not parse: {error}")
        return
    found = query_facts(sql)
    facts.tables |= found.tables
    facts.columns |= found.columns
    facts.identifiers |= found.aliases
    facts.aggregates |= found.aggregates
    facts.literals |= found.literals


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
    found = sql_strings(code, tree)
    for string in found:
        facts.sql.append(string.sql)
        _collect_sql(string.sql, facts)
    _collect_python(tree, {id(part) for s in found for part in ast.walk(s.node)}, facts)
    return facts

