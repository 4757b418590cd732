"""Scoring finished episodes against the instances' references (the impure part).

Sets ``passed``, ``consistency``, ``kept_constraints`` and ``constraints_required``
on each user turn, after which every metric is a pure function of the records.

Constraint retention, precisely: let ``L(code)`` be the literal values a piece of
code filters or compares on (``runtime.rewards.literal_values``: Python comparison
constants and SQL literals inside ``WHERE``/``HAVING``). For follow-up turn ``t`` the
required constraints are ``L(ref_t) ∩ (L(ref_1) ∪ ... ∪ L(ref_{t-1}))``: the earlier
turns' filters that the reference of turn ``t`` still applies (a turn that
deliberately drops a filter does not require it). The agent keeps them when each
required value is in ``L(agent_code_t)`` or written literally in that code.
``constraints_required`` records ``|required|``: a follow-up that requires nothing
keeps its constraints trivially and the coherence metric leaves it out.

Consistency: ``plan_code_agreement`` of the turn's last call that carried code, with
``no_entities=None``: a turn whose plan and code name no entity of the schema is not
judged (``consistency`` None) instead of getting the GRPO reward's neutral 0.5. A turn
with no code at all, or scored without ``terms``, gets 0.
"""

from __future__ import annotations

from runtime.agent import AgentTask, Episode
from runtime.rewards import literal_values, passes_expectations, plan_code_agreement

__all__ = ["required_constraints", "keeps_constraints", "score_episode"]


def required_constraints(task: AgentTask, turn_index: int) -> set[str]:
    earlier: set[str] = set()
    for turn in task.turns[:turn_index]:
        earlier |= literal_values(turn.reference_code)
    return literal_values(task.turns[turn_index].reference_code) & earlier


def keeps_constraints(code: str | None, required: set[str]) -> bool:
    if not code:
        return False
    found = literal_values(code)
    return all(value in found or f"'{value}'" in code or f'"{value}"' in code for value in required)


def score_episode(episode: Episode, task: AgentTask, references: list, terms=None) -> Episode:
    """Fill in the scored fields of ``episode`` (in place) and return it.

    Args:
        episode: As returned by the agent loop (with in-memory final frames).
        task: Its instance.
        references: Reference result frame per turn (None where the reference failed).
        terms: ``SchemaTerms`` for plan/code agreement (None scores 0).
    """
    finals = {t.index: t.final_frame for t in episode.turns if t.final_ok}
    for turn in episode.turns:
        spec = task.turns[turn.index]
        # `subset_of previous` compares with the agent's own previous answer.
        turn.passed = turn.final_ok and passes_expectations(turn.final_frame, references[turn.index],
                                                              spec.expectations, task.params,
                                                              finals.get(turn.index - 1))
        last = next((c for c in reversed(turn.calls) if c.code), None)
        turn.consistency = (plan_code_agreement(last.plan, last.code, terms, no_entities=None)
                            if (last and terms) else 0.0)
        if turn.index > 0:
            required = required_constraints(task, turn.index)
            turn.constraints_required = len(required)
            turn.kept_constraints = keeps_constraints(turn.final_code, required)
    return episode
