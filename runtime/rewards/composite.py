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

__all__ = ["TurnContext", "passes_expectations", "checks_passed_share", "score_turn"]


@dataclass
class TurnContext:
    """What a turn is judged against: the instance's params, reference result and expectations."""

    params: dict
    reference: object = None                  # the reference solution's result frame
    expectations: tuple = ()                  # craftc.ir.Expectation or their dicts
    terms: SchemaTerms | None = None
    llm_judge: object = None
    earlier_constraints: frozenset[str] = field(default_factory=frozenset)


def _models(expectations) -> list:
    from craftc.ir import Expectation
    return [e if isinstance(e, Expectation) else Expectation.model_validate(e) for e in expectations]


def passes_expectations(frame, reference, expectations, params: dict | None = None, previous=None) -> bool:
    """Whether an agent result passes the instance's expectations and checks.

    A comparison with the reference needs the reference result (None fails it); checks
    need only ``params`` and, for ``subset_of previous``, the ``previous`` result.
    """
    from craftc.ir import REFERENCE_KINDS
    from runtime.workflows import check_result

    checks = _models(expectations)
    if frame is None or (reference is None and any(e.kind in REFERENCE_KINDS for e in checks)):
        return False
    try:
        return bool(check_result(frame, reference, checks, params, previous).passed)
    except Exception:   # noqa: BLE001 - a frame the checker cannot read fails the test, never the run
        return False


def checks_passed_share(frame, expectations, params: dict | None = None, previous=None) -> float | None:
    """Share of the checks a result passes; None when the turn compares with a reference.

    A turn with no check at all scores 1.0 for a result that ran: there is nothing
    else to judge it by. ``subset_of previous`` counts only when ``previous`` is known.
    """
    from craftc.ir import REFERENCE_KINDS
    from runtime.workflows.expectations import check_share

    checks = _models(expectations)
    if any(e.kind in REFERENCE_KINDS for e in checks):
        return None
    checks = [e for e in checks if previous is not None or e.kind != "subset_of_previous"]
    if not checks:
        return 1.0 if frame is not None else 0.0
    try:
        passed, total = check_share(frame, checks, params, previous)
    except Exception:   # noqa: BLE001 - as above
        return 0.0
    return passed / total


def score_turn(turn, ctx: TurnContext, spec: RewardSpec) -> dict[str, float]:
    """Every component of one user turn plus ``total``; also sets ``turn.passed``.

    Without a reference comparison in the turn's expectations, R_outcome's test part is
    the share of the turn's checks the final result passes (``checks_passed_share``).

    Returns:
        ``{"outcome": .., "process": .., "consistency": .., "judge": .., "total": ..}``.
    """
    frame = turn.final_frame if turn.final_ok else None
    turn.passed = passes_expectations(frame, ctx.reference, ctx.expectations, ctx.params) if turn.final_ok else False
    share = checks_passed_share(frame, ctx.expectations, ctx.params)
    terms = ctx.terms
    scores = {
        "outcome": outcome_reward(turn, turn.passed if share is None else share, spec.step_rewards),
        "process": process_reward(turn, spec.penalties, spec.step_rewards),
        "consistency": consistency_reward(turn, terms, spec.step_rewards) if terms else 0.0,
        "judge": judge_reward(turn, ctx.params, terms, ctx.llm_judge),
    }
    scores["total"] = total({c: scores[c] for c in spec.components}, spec.weights, spec.aggregate)
    return scores
