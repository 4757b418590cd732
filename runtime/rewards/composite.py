"""Scoring one user turn with every component, as the recipe's reward spec says."""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.rewards.consistency import consistency_reward
from runtime.rewards.judge import judge_reward
from runtime.rewards.outcome import outcome_reward
from runtime.rewards.process import process_reward
from runtime.rewards.schema_terms import SchemaTerms
from runtime.rewards.spec import RewardSpec
from runtime.rewards.total import total

__all__ = ["TurnContext", "passes_expectations", "score_turn"]


@dataclass
class TurnContext:
    """What a turn is judged against: the instance's params, reference result and expectations."""

    params: dict
    reference: object = None                  # the reference solution's result frame
    expectations: tuple = ()                  # craftc.ir.Expectation or their dicts
    terms: SchemaTerms | None = None
    llm_judge: object = None
    earlier_constraints: frozenset[str] = field(default_factory=frozenset)


def passes_expectations(frame, reference, expectations) -> bool:
    """Whether an agent result passes the instance's expectations against the reference result."""
    from craftc.ir import Expectation
    from runtime.workflows import check_result

    if frame is None or reference is None:
        return False
    checks = [e if isinstance(e, Expectation) else Expectation.model_validate(e) for e in expectations]
    try:
        return bool(check_result(frame, reference, checks).passed)
    except Exception:   # noqa: BLE001 - a frame the checker cannot read fails the test, never the run
        return False


def score_turn(turn, ctx: TurnContext, spec: RewardSpec) -> dict[str, float]:
    """Every component of one user turn plus ``total``; also sets ``turn.passed``.

    Returns:
        ``{"outcome": .., "process": .., "consistency": .., "judge": .., "total": ..}``.
    """
    turn.passed = passes_expectations(turn.final_frame, ctx.reference, ctx.expectations) if turn.final_ok else False
    terms = ctx.terms
    scores = {
        "outcome": outcome_reward(turn, turn.passed, spec.step_rewards),
        "process": process_reward(turn, spec.penalties, spec.step_rewards),
        "consistency": consistency_reward(turn, terms, spec.step_rewards) if terms else 0.0,
        "judge": judge_reward(turn, ctx.params, terms, ctx.llm_judge),
    }
    scores["total"] = total({c: scores[c] for c in spec.components}, spec.weights, spec.aggregate)
    return scores
