"""Evaluation metrics: pure functions over scored ``Episode`` records.

Each metric is defined once here and in docs/evaluation.md; ``summarise`` gives
the value, its unit count and its 95% confidence interval (Wilson for rates over
the stated units, seeded bootstrap over instances for means).
"""

from __future__ import annotations

from runtime.agent import Episode, UserTurn
from runtime.eval.stats import bootstrap_mean, wilson

__all__ = ["METRICS", "PER_INSTANCE", "discovery_loops", "turn_passed", "instance_values", "metric_values", "per_workflow",
           "repair_counts", "summarise"]


def turn_passed(turn: UserTurn) -> bool:
    return bool(turn.final_ok and turn.passed)


def discovery_loops(turn: UserTurn) -> int:
    """Discovery calls made before (and in) the first successful execution of a user turn.

    A turn that never executes successfully counts all its discovery calls.
    """
    count = 0
    for call in turn.calls:
        count += call.discovery_calls
        if call.exec is not None and call.exec.ok:
            break
    return count


def _rate(flags: list[bool]) -> tuple[int, int]:
    return sum(flags), len(flags)


# name -> (kind, higher_is_better, description)
METRICS = {
    "agent_score": ("rate", True, "user turns whose final result passes the workflow's expectations"),
    "final_answer_accuracy": ("rate", True, "conversations whose last turn's final result passes"),
    "execution_success": ("rate", True, "user turns that end on a successful execution"),
    "multi_turn_coherence": ("rate", True, "follow-up turns that pass and keep every earlier constraint"),
    "consistency": ("mean", True, "plan/code agreement of each turn's final call, mean per instance"),
    "input_tokens": ("mean", False, "input tokens per model call, mean per instance"),
    "discovery_loops": ("mean", False, "discovery calls before the first successful execution, per user turn"),
    "model_calls": ("mean", False, "model calls per user turn, mean per instance"),
}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


# The per-instance value of each "mean" metric: the unit its mean and intervals are over.
PER_INSTANCE = {
    "consistency": lambda e: _mean([t.consistency or 0.0 for t in e.turns]),
    "input_tokens": lambda e: _mean([c.input_tokens for c in e.calls]),
    "discovery_loops": lambda e: _mean([discovery_loops(t) for t in e.turns]),
    "model_calls": lambda e: _mean([len(t.calls) for t in e.turns]),
}


def instance_values(episodes: list[Episode], metric: str) -> dict[str, float]:
    """A mean metric's value per instance id (instances without one are left out)."""
    values = {e.instance_id: PER_INSTANCE[metric](e) for e in episodes}
    return {k: v for k, v in values.items() if v is not None}


def metric_values(episodes: list[Episode]) -> dict[str, dict]:
    """Raw units of each metric: rates as (successes, n), means as per-instance values."""
    turns = [t for e in episodes for t in e.turns]
    follow_ups = [t for e in episodes for t in e.turns[1:]]
    per_instance = {name: [value(e) for e in episodes] for name, value in PER_INSTANCE.items()}
    return {
        "agent_score": {"rate": _rate([turn_passed(t) for t in turns])},
        "final_answer_accuracy": {"rate": _rate([turn_passed(e.turns[-1]) for e in episodes if e.turns])},
        "execution_success": {"rate": _rate([t.final_ok for t in turns])},
        "multi_turn_coherence": {"rate": _rate([turn_passed(t) and bool(t.kept_constraints) for t in follow_ups])},
        **{name: {"values": [v for v in values if v is not None]} for name, values in per_instance.items()},
    }


def summarise(episodes: list[Episode], seed: int = 0) -> dict[str, dict]:
    """Each metric's ``value``, ``n`` and 95% ``ci`` (``[low, high]``), rounded for stable JSON.

    A rate with no units (e.g. coherence with no follow-up turns) has ``value`` None.
    """
    out = {}
    for name, raw in metric_values(episodes).items():
        if "rate" in raw:
            k, n = raw["rate"]
            value, ci = (k / n if n else None), wilson(k, n)
        else:
            values = raw["values"]
            n, value, ci = len(values), _mean(values), bootstrap_mean(values, seed)
        out[name] = {"value": None if value is None else round(value, 6), "n": n,
                     "ci": [round(ci[0], 6), round(ci[1], 6)]}
    return out


def per_workflow(episodes: list[Episode]) -> list[dict]:
    """Agent score (user turns passing) per workflow and split, sorted by split then workflow.

    Each row: ``{workflow, split, passed, n, value}`` with ``value = passed / n``; a
    workflow evaluated in two splits (new params and new phrasings) gets two rows.
    """
    groups: dict[tuple[str, str], list[bool]] = {}
    for episode in episodes:
        groups.setdefault((episode.split, episode.workflow), []).extend(turn_passed(t) for t in episode.turns)
    rows = []
    for (split, workflow), flags in sorted(groups.items()):
        k, n = _rate(flags)
        rows.append({"workflow": workflow, "split": split, "passed": k, "n": n,
                     "value": round(k / n, 6) if n else None})
    return rows


def repair_counts(episodes: list[Episode]) -> dict[str, int]:
    """What the agent did when an attempt failed: ``{repairs, same_code, ran}``.

    A repair is a model call that follows a failed attempt in the same user turn: code
    that did not run, or no code block at all; either way the agent was shown the error.
    ``same_code`` counts repairs whose code is the failed attempt's byte for byte (the
    error was not read), ``ran`` those whose code then ran.

    Example:
        >>> from runtime.agent import ExecRecord, ModelCall
        >>> failed = ModelCall(9, "", code="q(1)", exec=ExecRecord(ok=False, error_type="QueryError"),
        ...                    tool_message="QueryError: no table q")
        >>> fixed = ModelCall(9, "", code="q(2)", exec=ExecRecord(ok=True), tool_message="[3 rows]")
        >>> repair_counts([Episode("i", turns=[UserTurn(0, "?", [failed, failed, fixed])])])
        {'repairs': 2, 'same_code': 1, 'ran': 1}
    """
    repairs = same = ran = 0
    for episode in episodes:
        for turn in episode.turns:
            for before, call in zip(turn.calls, turn.calls[1:]):
                if before.tool_message is None or (before.exec is not None and before.exec.ok):
                    continue        # the call after a run that worked writes the turn's answer
                repairs += 1
                same += call.code is not None and call.code == before.code
                ran += call.exec is not None and call.exec.ok
    return {"repairs": repairs, "same_code": same, "ran": ran}
