"""What the two solution checkers share: a read, a solution's Python tree and a query's SQL tree.

:mod:`craftc.check.solution_sql` finds the views and columns a solution's queries read;
:mod:`craftc.check.solution_frames` follows the frames those queries return. Both
parse with the functions here, and both report :class:`Read`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Read", "parse_solution", "parse_sql"]

_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


@dataclass(frozen=True)
class Read:
    """One thing a solution reads: a view (``column`` empty) or a column of a view."""

    view: str
    column: str
    line: int          # line of the solution file where the query first names it
    col: int = 1       # column of that line where the name appears (1-based)


def parse_solution(text: str) -> ast.Module | None:
    """The solution's Python tree with ``${param}`` placeholders rendered as literals."""
    # Placeholders become zeros of the same width so that columns stay where they are.
    rendered = _PLACEHOLDER.sub(lambda m: "0" * len(m.group()), text.replace("$$", "$"))
    try:
        return ast.parse(rendered)
    except SyntaxError:
        return None        # the distill gates report broken solutions; nothing to resolve here


@lru_cache(maxsize=1024)
def parse_sql(sql: str):
    """The sqlglot tree of a query (duckdb dialect), or None when it does not parse."""
    # sqlglot is imported on the first parse, not at the top: a warm compile finds every
    # solution in the read cache (craftc.check.read_cache) and never needs it.
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        return sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError, RecursionError):
        return None
