"""The SQL inside Python agent code and reference solutions, and what it reads.

One rule decides which strings of a piece of Python are SQL, for every reader: the
compiler's solution checks (E309), the distill judges and noise model, and the GRPO
rewards. A string literal (plain or f-string) is SQL when

- it is the first argument of a ``.query(...)``-style call (``api.query`` is the
  warehouse API's; ``sql``, ``execute``, ``run_sql`` and ``fetch`` are what models
  write when they guess), or is bound to a name passed there (``q = "..."``,
  ``api.query(q)``), or
- its text starts with ``SELECT`` or ``WITH`` (any case), wherever it is: code often
  builds a query in a variable before running it.

Each f-string interpolation reads as the identifier `PLACEHOLDER`, which parses in
any position (a value, a column, a table) and is left out of every fact, because
its value is not known. Code is parsed with ``ast``, never run; SQL is parsed with
sqlglot's DuckDB dialect (the warehouse's), one query per string. Code or SQL that
does not parse yields no facts rather than an error: the execution reports it.

sqlglot is imported only when SQL is parsed, so finding strings (and a compile whose
solution reads are cached) costs no sqlglot import.

Example:
    >>> code = 'n = 5\\nresult = api.query(f"SELECT name FROM campaign WHERE clicks > {n}")'
    >>> [s.sql for s in sql_strings(code)]
    ['SELECT name FROM campaign WHERE clicks > __param__']
    >>> facts = code_sql_facts(code)
    >>> sorted(facts.tables), sorted(facts.columns)
    (['campaign'], ['clicks', 'name'])
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = [
    "PLACEHOLDER", "SQL_CALLS", "SqlString", "QueryFacts", "parse_code", "sql_strings",
    "table_calls", "parse_sql", "sql_error", "query_facts", "code_sql_facts", "parse_queries",
    "literal_values", "redundant_joins", "uses_star",
    "code_literals", "filter_predicates", "group_keys", "sql_words", "normalise_literal",
]

PLACEHOLDER = "__param__"
"""What an f-string interpolation reads as in the SQL text."""

SQL_CALLS = frozenset({"query", "sql", "execute", "run_sql", "fetch"})
"""Method names whose first argument is taken to be SQL."""

_LOOKS_LIKE_SQL = re.compile(r"\s*(select|with)\b", re.I)


@dataclass(frozen=True)
class SqlString:
    """One SQL string literal of the code and where its source text sits."""

    sql: str           # the string's value, interpolations read as PLACEHOLDER
    line: int          # 1-based line where the literal starts
    start: int         # character offsets of the literal's source segment (quotes included)
    end: int
    node: ast.AST | None = field(default=None, compare=False, repr=False)   # the literal's ast node


@dataclass(frozen=True)
class QueryFacts:
    """What one or more queries read and compute; names are lower-cased."""

    tables: frozenset[str] = frozenset()       # every table name, CTE references included
    columns: frozenset[str] = frozenset()
    aliases: frozenset[str] = frozenset()      # names given with AS
    aggregates: frozenset[str] = frozenset()   # sqlglot's aggregate kinds: sum, avg, count, ...
    literals: frozenset[str] = frozenset()     # every literal's text, as written
    filter_literals: frozenset[str] = frozenset()  # literals under WHERE/HAVING, numbers normalised
    select_stars: int = 0                      # SELECTs that list ``*`` or ``t.*``
    redundant_joins: int = 0                   # see `redundant_joins`

    def __or__(self, other: QueryFacts) -> QueryFacts:
        return QueryFacts(self.tables | other.tables, self.columns | other.columns,
                          self.aliases | other.aliases, self.aggregates | other.aggregates,
                          self.literals | other.literals, self.filter_literals | other.filter_literals,
                          self.select_stars + other.select_stars,
                          self.redundant_joins + other.redundant_joins)


# ------------------------------------------------------------------ finding the strings


def parse_code(code: str) -> ast.Module | None:
    """The code's ``ast`` tree, or None when it does not parse."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _string_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else PLACEHOLDER for v in node.values)
    return None


def _sql_call_arg(node: ast.AST) -> ast.AST | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in SQL_CALLS and node.args:
        return node.args[0]
    return None


def _sql_nodes(tree: ast.AST) -> list[ast.AST]:
    """The string nodes that hold SQL (see the module docstring), each once."""
    pieces = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    run_names = {arg.id for n in ast.walk(tree)
                 if isinstance(arg := _sql_call_arg(n), ast.Name)}
    found: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        arg = _sql_call_arg(node)
        if arg is not None and _string_of(arg) is not None:
            found[id(arg)] = arg
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                and _string_of(node.value) is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in run_names for t in targets):
                found[id(node.value)] = node.value
        elif id(node) not in pieces and id(node) not in found:
            # The constant pieces of an f-string are not strings of their own.
            text = _string_of(node)
            if text is not None and _LOOKS_LIKE_SQL.match(text):
                found[id(node)] = node
    return list(found.values())


def sql_strings(code: str, tree: ast.Module | None = None) -> list[SqlString]:
    """The SQL string literals of ``code``, in source order (none when it does not parse).

    Example:
        >>> [s.sql for s in sql_strings("x = 1\\nresult = api.query('SELECT a FROM t')")]
        ['SELECT a FROM t']
    """
    tree = tree if tree is not None else parse_code(code)
    if tree is None:
        return []
    lines = code.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, byte_col: int) -> int:
        # ast columns count UTF-8 bytes; string slicing counts characters.
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:byte_col].decode(errors="ignore"))

    found = [SqlString(_string_of(node), node.lineno, offset(node.lineno, node.col_offset),
                       offset(node.end_lineno, node.end_col_offset), node)
             for node in _sql_nodes(tree) if node.end_lineno is not None]
    return sorted(found, key=lambda s: s.start)


def table_calls(tree: ast.AST | None) -> list[tuple[str, int]]:
    """(view, line) of each ``api.table("view", ...)`` call with a literal view name.

    Example:
        >>> table_calls(parse_code('df = api.table("campaign", ["id"])'))
        [('campaign', 1)]
    """
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "table" and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "api" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.args[0].value, node.args[0].lineno))
    return sorted(found, key=lambda t: t[1])


# ------------------------------------------------------------------ reading the SQL


@lru_cache(maxsize=4096)
def _parse(sql: str) -> tuple[exp.Expression | None, str | None]:
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError, RecursionError) as err:
        return None, str(err).splitlines()[0] if str(err) else type(err).__name__
    return tree, None


def parse_sql(sql: str) -> exp.Expression | None:
    """The sqlglot tree of a query (DuckDB dialect), or None when it does not parse.

    Trees are cached and shared: copy one (``tree.copy()``) before changing it.
    Several statements parse as one ``Block``.
    """
    return _parse(sql)[0]


def sql_error(sql: str) -> str | None:
    """The first line of sqlglot's complaint about ``sql``, or None when it parses."""
    return _parse(sql)[1]


def _norm(value) -> str:
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else repr(number)


def _named(names) -> frozenset[str]:
    return frozenset(n.lower() for n in names if n and PLACEHOLDER not in n)


@lru_cache(maxsize=4096)
def query_facts(sql: str) -> QueryFacts:
    """What one SQL string reads and computes (empty facts when it does not parse).

    Example:
        >>> f = query_facts("SELECT c.name, sum(s.clicks) AS n FROM campaign c JOIN daily_stat s "
        ...                 "ON s.campaign_id = c.id WHERE s.day >= '2024-01-01' GROUP BY 1")
        >>> sorted(f.tables), sorted(f.aggregates), sorted(f.aliases), sorted(f.filter_literals)
        (['campaign', 'daily_stat'], ['sum'], ['n'], ['2024-01-01'])
    """
    from sqlglot import exp

    tree = parse_sql(sql)
    if tree is None:
        return QueryFacts()
    filters = {_norm(lit.this) for clause in tree.find_all(exp.Where, exp.Having)
               for lit in clause.find_all(exp.Literal)}
    return QueryFacts(
        tables=_named(t.name for t in tree.find_all(exp.Table)),
        columns=_named(c.name for c in tree.find_all(exp.Column)),
        aliases=_named(a.alias for a in tree.find_all(exp.Alias)),
        aggregates=frozenset(type(a).__name__.lower() for a in tree.find_all(exp.AggFunc)),
        literals=frozenset(lit.this for lit in tree.find_all(exp.Literal) if PLACEHOLDER not in lit.this),
        filter_literals=frozenset(v for v in filters if PLACEHOLDER not in v),
        select_stars=sum(1 for s in tree.find_all(exp.Select) if uses_star(s, "")),
        redundant_joins=redundant_joins(tree),
    )


def code_sql_facts(code: str, tree: ast.Module | None = None) -> QueryFacts:
    """The facts of every SQL string of ``code`` together (counts add up)."""
    facts = QueryFacts()
    for found in sql_strings(code, tree):
        facts |= query_facts(found.sql)
    return facts


def parse_queries(code: str) -> list[exp.Expression]:
    """The sqlglot tree of each SQL string of ``code`` that parses, in source order."""
    return [tree for s in sql_strings(code) if (tree := parse_sql(s.sql)) is not None]


def literal_values(code: str) -> set[str]:
    """Literal values the code filters or compares on: Python comparisons and SQL WHERE/HAVING.

    Numbers are normalised (``7`` and ``7.0`` both give ``"7"``) so that a value written
    differently still counts as the same constraint.

    Example:
        >>> sorted(literal_values("df = api.query(\\"SELECT * FROM t WHERE n > 100.0\\")\\nr = df[df.k == 'x']"))
        ['100', 'x']
    """
    tree = parse_code(code)
    if tree is None:
        return set()
    values = {_norm(side.value) for node in ast.walk(tree) if isinstance(node, ast.Compare)
              for side in (node.left, *node.comparators)
              if isinstance(side, ast.Constant) and not isinstance(side.value, bool)}
    for found in sql_strings(code, tree):
        values |= query_facts(found.sql).filter_literals
    return values


def uses_star(select: exp.Select, name: str) -> bool:
    """Whether a SELECT lists a bare ``*`` or ``name.*``."""
    from sqlglot import exp

    return any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)
                                            and e.table in ("", name)) for e in select.expressions)


def redundant_joins(query: exp.Expression) -> int:
    """Joined tables none of whose columns appear outside their own ``ON`` condition.

    Only queries that qualify their columns are judged: an unqualified column might
    belong to the joined table.

    Example:
        >>> redundant_joins(parse_sql("SELECT c.name FROM campaign c JOIN advertiser a ON a.id = c.advertiser_id"))
        1
    """
    from sqlglot import exp

    count = 0
    for select in query.find_all(exp.Select):
        qualified = any(c.table for c in select.find_all(exp.Column))
        for join in select.args.get("joins") or ():
            table = join.this
            if not isinstance(table, exp.Table):
                continue
            name = table.alias_or_name
            on = join.args.get("on")
            used = any(column.table == name
                       and not (on is not None and column.find_ancestor(exp.Join) is join)
                       for column in select.find_all(exp.Column))
            if not used and qualified and not uses_star(select, name):
                count += 1
    return count


# ---------------------------------------------------------------- what eval's failure classes compare


def code_literals(code: str) -> set[str]:
    """Every literal value the code writes, wherever it stands, normalised like ``literal_values``.

    Python string and number constants (query texts themselves excluded) and the SQL
    literals of every clause (``LIMIT 10`` and ``- 30`` as well as ``WHERE``): the
    values a parameter can be written as. Code that does not parse gives the empty set.

    Example:
        >>> sorted(code_literals("result = api.query('SELECT a FROM t LIMIT 10', ['Acme'])"))
        ['10', 'Acme']
    """
    from sqlglot import exp

    tree = parse_code(code)
    if tree is None:
        return set()
    values: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value is not None:
            if isinstance(node.value, (int, float)) or (isinstance(node.value, str)
                                                         and not _LOOKS_LIKE_SQL.match(node.value)):
                values.add(_norm(node.value))
    for query in parse_queries(code):
        values |= {_norm(lit.this) for lit in query.find_all(exp.Literal)}
    return values


def filter_predicates(code: str) -> int:
    """How many comparisons (``=``, ``>``, ``IN``, ``BETWEEN``, ``LIKE``, ...) the code's
    queries make inside ``WHERE`` and ``HAVING``: a coarse count of its filters.

    Example:
        >>> filter_predicates('api.query("SELECT a FROM t WHERE b = 1 AND c > 3")')
        2
    """
    from sqlglot import exp

    return sum(1 for query in parse_queries(code) for clause in query.find_all(exp.Where, exp.Having)
               for _ in clause.find_all(exp.Predicate))


def group_keys(code: str) -> set[str]:
    """The column names the code's queries group by (``GROUP BY c.name`` gives ``name``).

    Table qualifiers are dropped, so two authors' aliases compare equal; a position
    (``GROUP BY 1``) stays as written.

    Example:
        >>> sorted(group_keys("api.query('SELECT c.name, sum(x) FROM t c GROUP BY c.name, c.id')"))
        ['id', 'name']
    """
    from sqlglot import exp

    keys: set[str] = set()
    for query in parse_queries(code):
        for group in query.find_all(exp.Group):
            for key in group.expressions:
                columns = list(key.find_all(exp.Column))
                keys |= {c.name.lower() for c in columns} if columns else {key.sql(dialect="duckdb").lower()}
    return keys


_WORD = re.compile(r"^[a-z_][a-z0-9_ ]*$")


def sql_words(code: str) -> set[str]:
    """The identifier and keyword tokens of the code's queries, lower-cased.

    Literals, placeholders and punctuation are left out, and so are one-letter
    tokens (table aliases such as ``c`` or ``s`` differ between authors): what is
    left says which tables, columns, functions and clauses a query uses.

    Example:
        >>> sorted(sql_words("api.query('SELECT c.name, sum(s.clicks) FROM campaign c WHERE c.id = 3')"))
        ['campaign', 'clicks', 'from', 'id', 'name', 'select', 'sum', 'where']
    """
    import sqlglot
    from sqlglot.tokens import TokenType

    skip = {TokenType.STRING, TokenType.NUMBER, TokenType.PLACEHOLDER, TokenType.PARAMETER}
    words: set[str] = set()
    for string in sql_strings(code):
        try:
            tokens = sqlglot.tokenize(string.sql, read="duckdb")
        except sqlglot.errors.SqlglotError:
            continue
        words |= {t.text.lower() for t in tokens
                  if t.token_type not in skip and len(t.text) > 1 and _WORD.match(t.text.lower())
                  and PLACEHOLDER not in t.text}
    return words


def normalise_literal(value) -> str:
    """A literal as ``literal_values`` and ``code_literals`` write it: ``7.0`` -> ``"7"``.

    Example:
        >>> normalise_literal(7.0), normalise_literal("Acme")
        ('7', 'Acme')
    """
    return _norm(value)
