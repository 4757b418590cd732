"""Gate 2 without a reference: self-consistency over the teacher's candidates.

Where no reference result is visible, the candidates of one instance turn that ran
and passed every check *vote* with their results: results are grouped as
``expect same_rows`` compares them (rows as a multiset, or in order when the turn
checks ``sorted_by``; numbers within the tolerance), and the largest group is
accepted when it holds at least the output gate's ``agree`` share of the voters and
at least :data:`MIN_AGREEING` candidates. The others are rejected as ``disagree``.
When no group is large enough, or two tie for largest, the instance turn is *set
aside*: every voter is rejected as ``no_agreement`` and the funnel counts it; no
answer is guessed.

A ``subset_of previous`` check is judged here too, against the agreed result of the
instance's previous turn (not judged when that turn was set aside).

A candidate whose code the judge gate rejects for ignoring a param the question asks
for (a ``prompt_params`` judge) does not vote: its rows answer another question (the
top 10 of 60 days where 30 were asked), so they are no evidence about this one. Two
such candidates that made the same substitution would otherwise agree with each
other and outvote, or tie with, the candidates that answered the question.

Example:
    >>> import pandas as pd
    >>> a, b = pd.DataFrame({"x": [1, 2]}), pd.DataFrame({"x": [2, 1]})
    >>> [len(g) for g in cluster_results([a, b, pd.DataFrame({"x": [3]})], ordered=False)]
    [2, 1]
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from runtime.distill.gates import decide_first

__all__ = ["MIN_AGREEING", "cluster_results", "settle_agreement"]

# One candidate agreeing with itself is no evidence: a lone survivor is set aside.
MIN_AGREEING = 2


def cluster_results(frames: list[Any], ordered: bool, tolerance: float = 1e-6) -> list[list[int]]:
    """Indices of ``frames`` grouped by equal result, largest group first (stable)."""
    from runtime.workflows.checks import same_result

    groups: list[list[int]] = []
    for index, frame in enumerate(frames):
        for group in groups:
            if same_result(frame, frames[group[0]], ordered, tolerance):
                group.append(index)
                break
        else:
            groups.append([index])
    return sorted(groups, key=lambda g: -len(g))


def _reject(outcome: dict, cls: str, reason: str, order: tuple[str, ...]) -> None:
    from runtime.distill.gates import GateOutcome

    view = GateOutcome(outcome["candidate_id"], outcome["accepted"], would_reject=outcome["would_reject"],
                       reasons=outcome["reasons"])
    view.would_reject["output"], view.reasons["output"] = cls, reason
    decide_first(view, order)
    outcome.update(accepted=view.accepted, gate=view.gate, reason_class=view.reason_class, reason=view.reason)


def settle_agreement(outcomes: list[dict], voters: dict[tuple[str, int], list[tuple[str, Any]]],
                     expectations: dict[tuple[str, int], tuple], params: dict[str, dict], threshold: float,
                     order: tuple[str, ...], off_question: Collection[str] = ()) -> dict[str, Any]:
    """Decide every voting instance turn; updates ``outcomes`` in place.

    Args:
        outcomes: ``GateOutcome.to_dict()`` records of the whole gate run.
        voters: (instance id, turn) -> [(candidate id, result frame)] of candidates that
            passed execution and every check.
        expectations: (instance id, turn) -> the turn's checks.
        params: instance id -> its params.
        threshold: the output gate's ``agree`` share.
        order: the gate order.
        off_question: candidates the judge gate rejects for ignoring an asked param;
            they do not vote (their outcome stays the judge's rejection).

    Returns:
        The funnel's ``agreement`` section: instance turns voted, agreed and set aside,
        and the candidates that did not vote because they answer another question.
    """
    from runtime.workflows import check_result

    by_id = {o["candidate_id"]: o for o in outcomes}
    agreed: dict[tuple[str, int], Any] = {}
    set_aside: list[str] = []
    abstained = 0
    for key in sorted(voters, key=lambda k: (k[0], k[1])):
        instance, turn = key
        checks = expectations.get(key, ())
        subset = [e for e in checks if e.kind == "subset_of_previous"]
        previous = agreed.get((instance, turn - 1))
        ballots = []
        for candidate, frame in voters[key]:
            if candidate in off_question:
                by_id[candidate]["agreement"] = {"voted": False, "why": "the code ignores a param the question "
                                                 "asks for: its result answers another question"}
                abstained += 1
                continue
            if subset and previous is not None:
                verdict = check_result(frame, None, subset, params.get(instance, {}), previous)
                if not verdict.passed:
                    _reject(by_id[candidate], "check", "; ".join(verdict.reasons[:3]), order)
                    continue
            ballots.append((candidate, frame))
        ordered = any(e.kind == "sorted_by" for e in checks)
        tolerance = min((e.tolerance for e in checks), default=1e-6)
        groups = cluster_results([f for _, f in ballots], ordered, tolerance)
        top = len(groups[0]) if groups else 0
        share = top / len(ballots) if ballots else 0.0
        tied = len(groups) > 1 and len(groups[1]) == top
        summary = {"voters": len(ballots), "largest": top, "share": round(share, 4)}
        if ballots and share >= threshold and top >= MIN_AGREEING and not tied:
            winners = set(groups[0])
            agreed[key] = ballots[groups[0][0]][1]
            for index, (candidate, _) in enumerate(ballots):
                by_id[candidate]["agreement"] = {**summary, "agreed": index in winners}
                if index not in winners:
                    _reject(by_id[candidate], "disagree", f"the result differs from the majority result "
                            f"({top} of {len(ballots)} candidates)", order)
        else:
            set_aside.append(f"{instance}/t{turn + 1}")
            for candidate, _ in ballots:
                by_id[candidate]["agreement"] = {**summary, "agreed": False}
                _reject(by_id[candidate], "no_agreement", f"no result reached the agreement threshold "
                        f"({top} of {len(ballots)} agree; needs {threshold:.0%} and at least {MIN_AGREEING})", order)
    voted = len(voters)
    return {"threshold": threshold, "min_agreeing": MIN_AGREEING, "instance_turns": voted,
            "agreed": voted - len(set_aside), "set_aside": len(set_aside),
            "set_aside_rate": round(len(set_aside) / voted, 4) if voted else 0.0,
            "set_aside_instance_turns": set_aside, "not_voting_off_question": abstained}
