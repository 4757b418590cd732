"""Evaluation metrics: pure functions over scored ``Episode`` records.

Each metric is defined once here (its docstring and ``METRICS``) and in
docs/evaluation.md. A user turn whose ``excluded`` reason is set (e.g. its reference
returns no rows, so passing says nothing) is left out of every metric; an episode whose
turns are all excluded contributes nothing.

``summarise`` gives each metric's value, unit count and a 95% clustered normal interval
(``runtime.eval.stats.clustered_mean``, Miller arXiv 2411.00640): per-turn rates are
clustered by conversation (``instance_id``), conversation-level rates and the
per-instance means have each instance as its own cluster, so every interval is of one
kind. ``paired_metric`` compares two arms on the turns both scored.
"""

from __future__ import annotations

from runtime.agent import Episode, UserTurn
from runtime.eval.stats import clustered_mean, minimum_detectable_difference, paired_clustered_difference

__all__ = ["METRICS", "PER_INSTANCE", "PER_TURN", "discovery_loops", "turn_passed", "scored_turns", "turn_scores",
           "cut_off_counts", "cut_off_line", "paired_metric", "instance_values", "metric_values", "per_workflow", "repair_counts", "summarise",
           "no_value_reason"]


def turn_passed(turn: UserTurn) -> bool:
    """The turn ended on a successful execution whose result passes the expectations."""
    return bool(turn.final_ok and turn.passed)


def scored_turns(episode: Episode) -> list[UserTurn]:
    """The episode's user turns that are scored (``excluded`` empty), in order."""
    return [t for t in episode.turns if not t.excluded]


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


# name -> (kind, higher_is_better, description); every metric leaves excluded turns out.
METRICS = {
    "agent_score": ("rate", True, "scored user turns whose final result passes the workflow's expectations "
                                  "(clustered by conversation)"),
    "final_answer_accuracy": ("rate", True, "conversations whose last turn is scored and its final result passes"),
    "execution_success": ("rate", True, "scored user turns that end on a successful execution "
                                        "(clustered by conversation)"),
    "multi_turn_coherence": ("rate", True, "scored follow-up turns whose reference keeps at least one earlier "
                                           "constraint, that pass and keep every such constraint "
                                           "(clustered by conversation)"),
    "consistency": ("mean", True, "plan/code agreement of each scored turn's final call, over turns whose plan "
                                  "or code names an entity (the others counted as unjudged), mean per instance"),
    "input_tokens": ("mean", False, "input tokens per model call of the scored turns, mean per instance"),
    "discovery_loops": ("mean", False, "discovery calls before the first successful execution per scored user "
                                       "turn, mean per instance"),
    "model_calls": ("mean", False, "model calls per scored user turn, mean per instance"),
}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _agent_score(episode: Episode) -> list[tuple[int, float]]:
    """Agent score: 1 for each scored turn that passes (``turn_passed``), else 0."""
    return [(t.index, float(turn_passed(t))) for t in scored_turns(episode)]


def _execution_success(episode: Episode) -> list[tuple[int, float]]:
    """Execution success: 1 for each scored turn that ends on a successful execution, else 0."""
    return [(t.index, float(bool(t.final_ok))) for t in scored_turns(episode)]


def _coherence(episode: Episode) -> list[tuple[int, float]]:
    """Multi-turn coherence: over the scored follow-up turns (not the first) whose
    reference keeps at least one earlier turn's constraint (``constraints_required`` >
    0, see runtime/eval/scoring.py), 1 when the turn passes and keeps every such
    constraint, else 0. Follow-ups that require none (or were scored before the count
    was recorded) are not units."""
    return [(t.index, float(turn_passed(t) and bool(t.kept_constraints)))
            for t in episode.turns[1:] if not t.excluded and (t.constraints_required or 0) > 0]


def _consistency(episode: Episode) -> list[tuple[int, float]]:
    """Consistency: plan/code agreement (``plan_code_agreement``, in [0, 1]) of each
    scored turn's last call with code; turns whose plan and code name no entity have no
    value (``consistency`` None) and are not units."""
    return [(t.index, float(t.consistency)) for t in scored_turns(episode) if t.consistency is not None]


def _final_answer(episode: Episode) -> list[tuple[int, float]]:
    """Final answer accuracy: one unit per conversation whose last turn is scored, 1
    when that turn passes. A conversation whose last turn is excluded is not a unit."""
    if not episode.turns or episode.turns[-1].excluded:
        return []
    last = episode.turns[-1]
    return [(last.index, float(turn_passed(last)))]


# The turn-level units of each metric: (turn index, value) per scored unit of an episode.
PER_TURN = {
    "agent_score": _agent_score,
    "final_answer_accuracy": _final_answer,
    "execution_success": _execution_success,
    "multi_turn_coherence": _coherence,
    "consistency": _consistency,
}


# The per-instance value of each "mean" metric: the unit its mean and intervals are over.
PER_INSTANCE = {
    "consistency": lambda e: _mean([v for _, v in _consistency(e)]),
    "input_tokens": lambda e: _mean([c.input_tokens for t in scored_turns(e) for c in t.calls]),
    "discovery_loops": lambda e: _mean([discovery_loops(t) for t in scored_turns(e)]),
    "model_calls": lambda e: _mean([len(t.calls) for t in scored_turns(e)]),
}

# Where a mean metric's interval is clipped: agreement lies in [0, 1], counts are >= 0.
_BOUNDS = {"consistency": (0.0, 1.0), "input_tokens": (0.0, None), "discovery_loops": (0.0, None),
           "model_calls": (0.0, None)}


def turn_scores(episodes: list[Episode], metric: str) -> dict[tuple[str, int], float]:
    """One arm's per-turn values of ``metric``, keyed by ``(instance_id, turn index)``.

    For the metrics in ``PER_TURN``: agent_score, execution_success,
    multi_turn_coherence and consistency give one value per unit turn (as their
    docstrings define the units); final_answer_accuracy one per conversation, keyed by
    its last turn. Excluded turns and turns without a value are absent.

    Example:
        >>> ep = Episode("i", turns=[UserTurn(0, "q", final_ok=True, passed=True),
        ...                          UserTurn(1, "q", excluded="the reference returns no rows")])
        >>> turn_scores([ep], "agent_score")
        {('i', 0): 1.0}
    """
    if metric not in PER_TURN:
        raise ValueError(f"{metric!r} has no per-turn values; one of {sorted(PER_TURN)}")
    scores: dict[tuple[str, int], float] = {}
    for episode in episodes:
        for index, value in PER_TURN[metric](episode):
            key = (episode.instance_id, index)
            if key in scores:
                raise ValueError(f"instance {episode.instance_id!r} turn {index} appears twice in one arm")
            scores[key] = value
    return scores


def paired_metric(episodes_a: list[Episode], episodes_b: list[Episode], metric: str) -> dict:
    """Arm A minus arm B on ``metric``, over the units both arms scored.

    Units are paired by ``(instance_id, turn index)`` (``turn_scores``); the mean
    difference gets a clustered standard error (cluster: the instance), a 95% interval
    clipped to [-1, 1], a two-sided p-value (``paired_clustered_difference``) and
    ``mde``: the minimum difference detectable at alpha 0.05 with 80% power from that
    standard error (None when no unit was paired).

    Returns:
        ``{value, se, ci, n, clusters, p_value, mde}``.

    Example:
        >>> def arm(*passed):
        ...     return [Episode(f"i{k}", turns=[UserTurn(0, "q", final_ok=True, passed=p)])
        ...             for k, p in enumerate(passed)]
        >>> paired_metric(arm(True, True), arm(True, False), "agent_score")["value"]
        0.5
    """
    a, b = turn_scores(episodes_a, metric), turn_scores(episodes_b, metric)
    keys = sorted(set(a) & set(b))
    out = paired_clustered_difference([a[k] for k in keys], [b[k] for k in keys], [k[0] for k in keys],
                                      bounds=(-1.0, 1.0))
    out["mde"] = minimum_detectable_difference(out["se"]) if out["n"] else None
    return out


def instance_values(episodes: list[Episode], metric: str) -> dict[str, float]:
    """A mean metric's value per instance id (instances without one are left out)."""
    values = {e.instance_id: PER_INSTANCE[metric](e) for e in episodes}
    return {k: v for k, v in values.items() if v is not None}


def metric_values(episodes: list[Episode]) -> dict[str, dict]:
    """Raw units of each metric: ``values`` with their ``clusters`` (instance ids).

    Rates: one 0/1 value per unit (per scored turn, per conversation for
    final_answer_accuracy) and ``rate``: ``(successes, n)``. Means: one value per
    instance. Consistency also carries ``unjudged``: scored turns whose plan and code
    name no entity (no consistency value).
    """
    out: dict[str, dict] = {}
    for name, (kind, _, _) in METRICS.items():
        if kind == "rate":
            units = [(e.instance_id, v) for e in episodes for _, v in PER_TURN[name](e)]
            values = [v for _, v in units]
            out[name] = {"values": values, "clusters": [c for c, _ in units],
                         "rate": (int(sum(values)), len(values))}
        else:
            per = [(e.instance_id, PER_INSTANCE[name](e)) for e in episodes]
            per = [(c, v) for c, v in per if v is not None]
            out[name] = {"values": [v for _, v in per], "clusters": [c for c, _ in per]}
    out["consistency"]["unjudged"] = sum(1 for e in episodes for t in scored_turns(e) if t.consistency is None)
    return out


def summarise(episodes: list[Episode], seed: int = 0) -> dict[str, dict]:
    """Each metric's ``value``, ``n``, 95% ``ci`` (``[low, high]``), ``se`` and ``clusters``.

    All from ``clustered_mean``, rounded for stable JSON: rates over their units
    (``n`` turns, or conversations for final_answer_accuracy, ``clusters`` the
    conversations they belong to) with ``successes``, clipped to [0, 1]; means over
    per-instance values (``n`` = ``clusters`` = instances), counts clipped at 0.
    Consistency also carries ``unjudged`` (see ``metric_values``). A metric with no
    units (e.g. coherence with no follow-up that requires a constraint) has ``value``
    None. ``seed`` is accepted for callers and unused: the intervals are analytic.

    Example:
        >>> ep = Episode("i", turns=[UserTurn(0, "q", final_ok=True, passed=True), UserTurn(1, "q")])
        >>> summarise([ep])["agent_score"]
        {'value': 0.5, 'n': 2, 'ci': [0.5, 0.5], 'se': 0.0, 'clusters': 1, 'successes': 1}
    """
    out = {}
    for name, raw in metric_values(episodes).items():
        bounds = (0.0, 1.0) if METRICS[name][0] == "rate" else _BOUNDS[name]
        summary = clustered_mean(raw["values"], raw["clusters"], bounds=bounds)
        out[name] = {"value": summary["value"], "n": summary["n"], "ci": summary["ci"], "se": summary["se"],
                     "clusters": summary["clusters"]}
        if "rate" in raw:
            out[name]["successes"] = raw["rate"][0]
        if "unjudged" in raw:
            out[name]["unjudged"] = raw["unjudged"]
        if summary["value"] is None:
            out[name]["why"] = no_value_reason(name, episodes)
    return out


def no_value_reason(metric: str, episodes: list[Episode]) -> str:
    """Why ``metric`` has no value over ``episodes`` (no unit to measure), in the report's words.

    Example:
        >>> no_value_reason("multi_turn_coherence", [Episode("i", turns=[UserTurn(0, "q")])])
        'no conversation evaluated'
    """
    if not episodes:
        return "no instance evaluated"
    scored = [t for e in episodes for t in scored_turns(e)]
    if not scored:
        return "every turn is excluded (its reference returns no rows or fails)"
    if metric == "multi_turn_coherence":
        follow_ups = [t for e in episodes for t in e.turns[1:]]
        if not follow_ups:
            return "no conversation evaluated"
        if all(t.excluded for t in follow_ups):
            return "every follow-up turn is excluded"
        return "no follow-up turn carries a constraint of an earlier turn"
    if metric == "final_answer_accuracy":
        return "every conversation's last turn is excluded"
    if metric == "consistency":
        return "no scored turn's plan or code names an entity"
    return "no scored turn has a value"


def per_workflow(episodes: list[Episode]) -> list[dict]:
    """Agent score (scored user turns passing) per workflow and split, sorted by split then workflow.

    Each row: ``{workflow, split, passed, n, value}`` with ``value = passed / n``; a
    workflow evaluated in two splits (new params and new phrasings) gets two rows.
    Excluded turns are left out; a group whose turns are all excluded has ``n`` 0 and
    ``value`` None.
    """
    groups: dict[tuple[str, str], list[bool]] = {}
    for episode in episodes:
        groups.setdefault((episode.split, episode.workflow), []).extend(turn_passed(t) for t in scored_turns(episode))
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
    error was not read), ``ran`` those whose code then ran. Under ``eval {
    repeat_temperature }`` the counts are of the calls that ran (a repeat decoded again,
    sampled, counts as its sample), and ``resampled`` says how many were. Excluded turns
    are left out, like every metric here.

    Example:
        >>> from runtime.agent import ExecRecord, ModelCall
        >>> failed = ModelCall(9, "", code="q(1)", exec=ExecRecord(ok=False, error_type="QueryError"),
        ...                    tool_message="QueryError: no table q")
        >>> fixed = ModelCall(9, "", code="q(2)", exec=ExecRecord(ok=True), tool_message="[3 rows]")
        >>> repair_counts([Episode("i", turns=[UserTurn(0, "?", [failed, failed, fixed])])])
        {'repairs': 2, 'same_code': 1, 'ran': 1}
    """
    repairs = same = ran = resampled = 0
    for episode in episodes:
        for turn in scored_turns(episode):
            for before, call in zip(turn.calls, turn.calls[1:]):
                if before.tool_message is None or (before.exec is not None and before.exec.ok):
                    continue        # the call after a run that worked writes the turn's answer
                repairs += 1
                same += call.code is not None and call.code == before.code
                ran += call.exec is not None and call.exec.ok
                resampled += call.resampled
    counts = {"repairs": repairs, "same_code": same, "ran": ran}
    return {**counts, "resampled": resampled} if resampled else counts


def cut_off_counts(episodes: list[Episode]) -> dict[str, int]:
    """How many model calls of the scored turns stopped at ``max_new_tokens`` before their
    end-of-turn token: ``{calls, cut_off}``. A call cut inside its ``<CODE>`` block writes
    code that does not run, which the failure classes count as an execution error.

    Example:
        >>> from runtime.agent import ModelCall
        >>> cut_off_counts([Episode("i", turns=[UserTurn(0, "?", [ModelCall(9, "", cut_off=True), ModelCall(9, "")])])])
        {'calls': 2, 'cut_off': 1}
    """
    calls = [call for episode in episodes for turn in scored_turns(episode) for call in turn.calls]
    return {"calls": len(calls), "cut_off": sum(call.cut_off for call in calls)}


def cut_off_line(counts: dict[str, int], limit: int | None) -> str:
    """The console and report sentence for calls cut at ``max_new_tokens``.

    >>> cut_off_line({"calls": 92, "cut_off": 27}, 384)
    '27 of its 92 model calls (29%) stopped at max_new_tokens 384 before their end, code cut there does not run; if the trained answers are that long, raise `max_new_tokens` in the grpo stage (eval decodes with it too)'
    """
    at = f"max_new_tokens {limit}" if limit else "max_new_tokens"
    return (f"{counts['cut_off']} of its {counts['calls']} model calls ({100 * counts['cut_off'] / counts['calls']:.0f}%) "
            f"stopped at {at} before their end, code cut there does not run; if the trained answers are that long, "
            "raise `max_new_tokens` in the grpo stage (eval decodes with it too)")
