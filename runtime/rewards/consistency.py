"""R_consistency: does the code do what the plan says (plan/code agreement)?

Half of the score is the distill step's ``plan_code`` judge (the same judge the
Tri-Gate filter votes with) as 1 or 0, so training optimises what the gate
accepted. The other half is graded, so a group of imperfect rollouts still has a
gradient: the entities the plan names in business words are compared with the logical
views the code reads (its SQL, see `craftc.sql_facts`, and its ``api.table`` calls), and
every metric the plan names must have its entities read by the code. A plan that promises CTR while the code only counts
campaigns scores low; so does code that silently reads tables the plan never
mentions.
"""

from __future__ import annotations

from craftc.sql_facts import code_sql_facts, parse_code, table_calls
from runtime.rewards.schema_terms import SchemaTerms

__all__ = ["code_entities", "plan_code_agreement", "consistency_reward"]


def code_entities(code: str, terms: SchemaTerms) -> set[str]:
    """Entities whose logical views the code reads, in SQL or with ``api.table``."""
    tree = parse_code(code)
    views = set(code_sql_facts(code, tree).tables) | {view.lower() for view, _ in table_calls(tree)}
    return {terms.views[view] for view in views if view in terms.views}


def plan_code_agreement(plan: str | None, code: str | None, terms: SchemaTerms,
                        no_entities: float | None = 0.5) -> float | None:
    """Agreement in [0, 1]: the mean of the ``plan_code`` judge's verdict (1/0) and
    the Jaccard of plan and code entities times the share of honoured metrics.

    A missing plan or code scores 0. When neither the plan nor the code names an
    entity the Jaccard has no value: it is taken as ``no_entities`` (0.5, neutral, for
    the GRPO reward), or with ``no_entities=None`` the agreement itself is None (not
    judged: the evaluation's consistency metric leaves such a turn out).

    Example:
        >>> from craftc.ir import Schema, Entity, EntityKey
        >>> s = Schema(name="s", version=1, source="s.craft", entities=(
        ...     Entity(name="Campaign", table="t.c", view="campaign", key=EntityKey(name="id", column="cid")),))
        >>> terms = SchemaTerms.from_schema(s)
        >>> plan_code_agreement("Count campaigns.", "result = api.query('SELECT count(*) FROM campaign')", terms)
        1.0
        >>> print(plan_code_agreement("Add one.", "result = 1 + 1", terms, no_entities=None))
        None
    """
    if not plan or not code:
        return 0.0
    in_plan, in_code = terms.entities_in_text(plan), code_entities(code, terms)
    union = in_plan | in_code
    if not union and no_entities is None:
        return None
    entity_score = len(in_plan & in_code) / len(union) if union else no_entities
    metrics = terms.metrics_in_text(plan)
    honoured = [m for m in metrics if set(terms.metrics[m]) <= in_code]
    metric_score = len(honoured) / len(metrics) if metrics else 1.0
    graded = entity_score * metric_score
    if terms.judge is None:
        return graded
    from runtime.distill.judges import JudgeCase

    verdict = terms.judge.judge(JudgeCase(ask="", plan=plan, code=code, params={}))
    return 0.5 * float(verdict.passed) + 0.5 * graded


def consistency_reward(turn, terms: SchemaTerms, step_rewards: bool = True) -> float:
    """Mean plan/code agreement over the turn's calls that carried code (or the last one)."""
    calls = [c for c in turn.calls if c.code]
    if not step_rewards:
        calls = calls[-1:]
    if not calls:
        return 0.0
    return sum(plan_code_agreement(c.plan, c.code, terms) for c in calls) / len(calls)
