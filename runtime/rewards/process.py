"""R_process: how the agent worked, independent of whether the answer was right.

Per model call: the turn's structure (three well-formed blocks) and its code's
quality read from the AST (it parses, no bare ``except``, no ``while True``, no
loop over a huge ``range``). Then penalties from the recipe for anti-patterns read
from the SQL with sqlglot: a redundant join (a joined table none of whose columns
is used outside its own join condition), ``SELECT *``, and each schema-discovery
call (the schema should be learned, not looked up).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from craftc.sql_facts import code_sql_facts, redundant_joins

__all__ = ["CodeFindings", "HUGE_RANGE", "inspect_code", "redundant_joins", "process_reward"]

HUGE_RANGE = 1_000_000          # a loop over more items than this is a scan the warehouse should do


@dataclass(frozen=True)
class CodeFindings:
    parses: bool
    bare_excepts: int = 0
    unbounded_loops: int = 0     # `while True` and loops over range(>HUGE_RANGE)
    select_stars: int = 0
    redundant_joins: int = 0

    @property
    def quality(self) -> float:
        """1.0 for clean code, 0.0 for code that does not parse, halves per problem."""
        if not self.parses:
            return 0.0
        return 0.5 ** (self.bare_excepts + self.unbounded_loops)


def _huge_range(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"):
        return False
    bounds = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, int)]
    return bool(bounds) and max(bounds) > HUGE_RANGE


def inspect_code(code: str) -> CodeFindings:
    """Read ``code``'s AST and its SQL for the problems the process reward counts."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return CodeFindings(parses=False)
    bare = sum(1 for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.type is None)
    loops = sum(1 for n in ast.walk(tree) if isinstance(n, ast.While)
                and isinstance(n.test, ast.Constant) and n.test.value is True)
    loops += sum(1 for n in ast.walk(tree) if isinstance(n, (ast.For, ast.comprehension)) and _huge_range(n.iter))
    sql = code_sql_facts(code, tree)
    return CodeFindings(True, bare, loops, sql.select_stars, sql.redundant_joins)


def _call_score(call) -> float:
    structure = 1.0 if call.well_formed else (0.5 if call.code or call.answer else 0.0)
    if call.code is None:
        return structure if call.answer is not None else 0.5 * structure
    return 0.5 * structure + 0.5 * inspect_code(call.code).quality


def process_reward(turn, penalties: dict[str, float], step_rewards: bool = True) -> float:
    """Process score of one user turn, in [0, 1].

    The mean call score (each tool turn counts with step rewards; only the last
    call without) minus ``penalties[name]`` per occurrence of ``discovery_call``,
    ``redundant_join`` and ``select_star``, clipped to [0, 1].

    Args:
        turn: A ``runtime.agent.UserTurn``.
        penalties: The recipe's penalties, e.g. ``{"select_star": 0.05}``.
        step_rewards: Score every model call, not only the last.
    """
    calls = turn.calls if step_rewards else turn.calls[-1:]
    if not calls:
        return 0.0
    score = sum(_call_score(c) for c in calls) / len(calls)
    findings = [inspect_code(c.code) for c in calls if c.code]
    score -= penalties.get("discovery_call", 0.0) * sum(c.discovery_calls for c in calls)
    score -= penalties.get("redundant_join", 0.0) * sum(f.redundant_joins for f in findings)
    score -= penalties.get("select_star", 0.0) * sum(f.select_stars for f in findings)
    return min(1.0, max(0.0, score))
