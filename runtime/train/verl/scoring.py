"""Scoring a verl rollout with craft's composite reward, from the policy's own text only.

verl's reward managers decode the whole response, tool output included, so a reward
that read that text would pay a model for what a tool printed (an error message that
quotes code, a tool that echoes the answer). Here a rollout is the list of the policy's
own assistant turns (``craft_policy_turns``, recorded by craft's agent loop from the
tokens with response mask 1). Each turn's ``<CODE>`` block is run again in the sandbox,
exactly as the agent loop ran it, and the turn is scored as the TRL path scores it
(``runtime.rewards.score_turn``).
"""

from __future__ import annotations

import io
import json
from functools import lru_cache
from pathlib import Path

__all__ = ["POLICY_TURNS", "frame_to_json", "frame_from_json", "user_turn_from_policy", "score_policy_turns",
           "plan_context"]

# The extra field craft's agent loop stores the policy's own turn texts under.
POLICY_TURNS = "craft_policy_turns"


def frame_to_json(frame) -> str:
    """A reference result frame as JSON text (the parquet's ``ground_truth``)."""
    return "" if frame is None else frame.to_json(orient="split", date_format="iso", index=False)


def frame_from_json(text: str):
    import pandas as pd

    return None if not text else pd.read_json(io.StringIO(text), orient="split")


def user_turn_from_policy(texts: list[str], sandbox, params: dict, fmt, max_turns: int | None = None):
    """A ``runtime.agent.UserTurn`` from the policy's turn texts, each ``<CODE>`` run in ``sandbox``."""
    from runtime.agent.episode import ExecRecord, ModelCall, UserTurn, count_discovery
    from runtime.distill.blocks import parse_turn

    turn = UserTurn(index=0, ask="")
    for text in texts[: max_turns or len(texts)]:
        parsed = parse_turn(text, fmt)
        call = ModelCall(0, text, parsed.think, parsed.plan, parsed.code, parsed.answer, parsed.complete)
        turn.calls.append(call)
        if parsed.code:
            result = sandbox.run(parsed.code, params)
            call.exec = ExecRecord.from_result(result)
            call.discovery_calls = count_discovery(call.exec.api_calls)
            if call.exec.ok:
                turn.final_ok, turn.final_code, turn.final_plan = True, parsed.code, parsed.plan
                turn.final_frame = result.result_frame
                break
        elif parsed.answer is not None:
            turn.answer = parsed.answer
            break
    return turn


@lru_cache(maxsize=4)
def plan_context(plan_dir: str):
    """(reward spec, schema terms, block format) of a plan dir, read once per process."""
    from craftc.ir import BlockFormat
    from runtime.plan import load_plan
    from runtime.rewards import RewardSpec, SchemaTerms

    plan = load_plan(Path(plan_dir))
    spec = RewardSpec.from_json(Path(plan_dir) / "specs" / "reward.json")
    return spec, SchemaTerms.from_schema(plan.recipe.schema_), BlockFormat(**plan.recipe.format.model_dump())


def score_policy_turns(texts: list[str], extra_info: dict, ground_truth: str, sandbox, spec, terms, fmt) -> dict:
    """``{"score": R_total, "outcome", "process", "consistency", "judge"}`` of one rollout."""
    from runtime.rewards import TurnContext, score_turn

    params = json.loads(extra_info.get("params") or "{}")
    turn = user_turn_from_policy(list(texts), sandbox, params, fmt)
    ctx = TurnContext(params=params, reference=frame_from_json(ground_truth),
                      expectations=tuple(json.loads(extra_info.get("expectations") or "[]")), terms=terms)
    scores = score_turn(turn, ctx, spec)
    return {"score": float(scores["total"]), **{c: float(scores[c]) for c in ("outcome", "process", "consistency",
                                                                              "judge")}}
