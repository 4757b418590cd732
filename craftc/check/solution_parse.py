"""What the two solution checkers share: a read, a solution's Python tree and a query's SQL tree.

:mod:`craftc.check.solution_sql` finds the views and columns a solution's queries read;
:mod:`craftc.check.solution_frames` follows the frames those queries return. Both
parse with the functions here, and both report :class:`Read`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from craftc.sql_facts import parse_code, parse_sql  # the one reader of code and SQL, shared by both checkers

__all__ = ["Read", "parse_solution", "parse_sql", "render_solution"]

_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


@dataclass(frozen=True)
class Read:
    """One thing a solution reads: a view (``column`` empty) or a column of a view."""

    view: str
    column: str
    line: int          # line of the solution file where the query first names it
    col: int = 1       # column of that line where the name appears (1-based)


def render_solution(text: str) -> str:
    """The solution's text with ``${param}`` placeholders rendered as literals."""
    # Placeholders become zeros of the same width so that columns stay where they are.
    return _PLACEHOLDER.sub(lambda m: "0" * len(m.group()), text.replace("$$", "$"))


def parse_solution(text: str) -> ast.Module | None:
    """The solution's Python tree with ``${param}`` placeholders rendered as literals."""
    return parse_code(render_solution(text))  # None: the distill gates report broken solutions
