"""R_judge: business alignment of the final turn with the analyst's request.

Two deterministic checks, averaged: every prompt parameter is honoured (its value
appears in the code as a literal, or in the plan as text) and the plan leaks no
DDL (no SQL keywords, no physical or logical table or column names: the plan is
for the business reader). An optional LLM judge (any callable returning a score
in [0, 1]) joins the average.
"""

from __future__ import annotations

import re

from runtime.rewards.schema_terms import SchemaTerms

__all__ = ["params_honoured", "ddl_leaks", "judge_reward"]

_SQL_WORDS = re.compile(r"\b(SELECT|FROM|JOIN|WHERE|GROUP BY|ORDER BY|CREATE|TABLE|VIEW)\b")


def params_honoured(params: dict, plan: str | None, code: str | None) -> float:
    """Share of parameter values that appear in the code (as ``repr`` or text) or the plan.

    Example:
        >>> params_honoured({"n": 5, "advertiser": "Acme"}, "Top 5 for Acme", "x = 5")
        1.0
        >>> params_honoured({"n": 5, "days": 30}, "", "x = 5")
        0.5
    """
    if not params:
        return 1.0
    plan, code = plan or "", code or ""
    hits = 0
    for value in params.values():
        text = str(value)
        if repr(value) in code or text in code or (text and text in plan):
            hits += 1
    return hits / len(params)


def ddl_leaks(plan: str | None, terms: SchemaTerms | None = None) -> list[str]:
    """DDL words in a plan: SQL keywords in capitals and schema identifiers."""
    if not plan:
        return []
    leaks = _SQL_WORDS.findall(plan)
    if terms is not None:
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", plan.lower()))
        leaks += sorted(words & terms.identifiers)
    return leaks


def judge_reward(turn, params: dict, terms: SchemaTerms | None = None, llm_judge=None) -> float:
    """Judge score of a user turn's final call, in [0, 1]; 0 when the turn produced nothing."""
    call = next((c for c in reversed(turn.calls) if c.code or c.answer), None)
    if call is None:
        return 0.0
    scores = [params_honoured(params, call.plan, call.code), 0.0 if ddl_leaks(call.plan, terms) else 1.0]
    if llm_judge is not None:
        scores.append(float(llm_judge(turn, params)))
    return sum(scores) / len(scores)
