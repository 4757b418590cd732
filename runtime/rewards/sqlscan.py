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

__all__ = ["sql_strings", "parse_queries", "literal_values", "code_literals", "filter_predicates", "sql_words",
           "group_keys", "normalise_literal"]

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


def code_literals(code: str) -> set[str]:
    """Every literal value the code writes, wherever it stands, normalised like ``literal_values``.

    Python string and number constants (query texts themselves excluded) and the SQL
    literals of every clause (``LIMIT 10`` and ``- 30`` as well as ``WHERE``): the
    values a parameter can be written as. Code that does not parse gives the empty set.

    Example:
        >>> sorted(code_literals("result = api.query('SELECT a FROM t LIMIT 10', ['Acme'])"))
        ['10', 'Acme']
    """
    values: set[str] = set()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return values
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value is not None:
            if isinstance(node.value, (int, float)) or (isinstance(node.value, str) and not _SQL_START.match(node.value)):
                values.add(_norm(node.value))
    for query in parse_queries(code):
        for lit in query.find_all(exp.Literal):
            values.add(_norm(lit.this))
    return values


def filter_predicates(code: str) -> int:
    """How many comparisons (``=``, ``>``, ``IN``, ``BETWEEN``, ``LIKE``, ...) the code's
    queries make inside ``WHERE`` and ``HAVING``: a coarse count of its filters.

    Example:
        >>> filter_predicates('api.query("SELECT a FROM t WHERE b = 1 AND c > 3")')
        2
    """
    count = 0
    for query in parse_queries(code):
        for clause in query.find_all(exp.Where, exp.Having):
            count += sum(1 for _ in clause.find_all(exp.Predicate))
    return count


def group_keys(code: str) -> set[str]:
    """The column names the code's queries group by (``GROUP BY c.name`` gives ``name``).

    Table qualifiers are dropped, so two authors' aliases compare equal; a position
    (``GROUP BY 1``) stays as written.

    Example:
        >>> sorted(group_keys("api.query('SELECT c.name, sum(x) FROM t c GROUP BY c.name, c.id')"))
        ['id', 'name']
    """
    keys: set[str] = set()
    for query in parse_queries(code):
        for group in query.find_all(exp.Group):
            for key in group.expressions:
                columns = list(key.find_all(exp.Column))
                keys |= {c.name.lower() for c in columns} if columns else {key.sql(dialect="duckdb").lower()}
    return keys


def sql_words(code: str) -> set[str]:
    """The identifier and keyword tokens of the code's queries, lower-cased.

    Literals, placeholders and punctuation are left out, and so are one-letter
    tokens (table aliases such as ``c`` or ``s`` differ between authors): what is
    left says which tables, columns, functions and clauses a query uses.

    Example:
        >>> sorted(sql_words("api.query('SELECT c.name, sum(s.clicks) FROM campaign c WHERE c.id = 3')"))
        ['campaign', 'clicks', 'from', 'id', 'name', 'select', 'sum', 'where']
    """
    from sqlglot.tokens import TokenType

    skip = {TokenType.STRING, TokenType.NUMBER, TokenType.PLACEHOLDER, TokenType.PARAMETER}
    words: set[str] = set()
    for text in sql_strings(code):
        try:
            tokens = sqlglot.tokenize(text, read="duckdb")
        except sqlglot.errors.SqlglotError:
            continue
        for token in tokens:
            word = token.text.lower()
            if token.token_type not in skip and len(word) > 1 and _WORD.match(word):
                words.add(word)
    return words


_WORD = re.compile(r"^[a-z_][a-z0-9_ ]*$")


def normalise_literal(value) -> str:
    """A literal as ``literal_values`` and ``code_literals`` write it: ``7.0`` -> ``"7"``.

    Example:
        >>> normalise_literal(7.0), normalise_literal("Acme")
        ('7', 'Acme')
    """
    return _norm(value)


def _norm(value) -> str:
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else repr(number)
