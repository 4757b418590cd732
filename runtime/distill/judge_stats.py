"""Per-judge figures for the funnel: reject rate, abstentions, cost, agreement.

Every judge of the ensemble answers for every candidate the judge gate sees, so
two judges can be compared on the candidates where neither abstained: Cohen's
kappa is their agreement beyond what their reject rates alone would give (1 is
perfect, 0 is chance). It is None when it is undefined (both judges gave one
answer throughout) or when they share no candidate.

Example:
    >>> cohen_kappa([True, True, False, False], [True, False, False, False])
    0.5
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

__all__ = ["cohen_kappa", "judge_stats"]


def cohen_kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two judges' pass/fail answers on the same candidates."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1:
        return None
    return round((observed - expected) / (1 - expected), 4)


def judge_stats(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"per_judge": {...}, "kappa": [...]}`` from gate outcomes' ``judges`` lists."""
    answers: dict[str, dict[str, bool | None]] = {}
    costs: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for v in outcome.get("judges", []):
            answers.setdefault(v["judge"], {})[outcome["candidate_id"]] = v["passed"]
            if "cost" in v:
                total = costs.setdefault(v["judge"], {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                                      "cached": 0})
                for key in ("requests", "prompt_tokens", "completion_tokens"):
                    total[key] += v["cost"].get(key, 0)
                total["cached"] += bool(v["cost"].get("cached"))
    per_judge = {}
    for name, by_id in answers.items():
        voted = [p for p in by_id.values() if p is not None]
        rejected = sum(1 for p in voted if not p)
        per_judge[name] = {"candidates": len(by_id), "abstained": len(by_id) - len(voted), "rejected": rejected,
                           "reject_rate": round(rejected / len(voted), 4) if voted else None,
                           **({"cost": costs[name]} if name in costs else {})}
    kappa = []
    for first, second in combinations(answers, 2):
        shared = [cid for cid, p in answers[first].items()
                  if p is not None and answers[second].get(cid) is not None]
        kappa.append({"judges": [first, second], "candidates": len(shared),
                      "kappa": cohen_kappa([answers[first][c] for c in shared], [answers[second][c] for c in shared])})
    return {"per_judge": per_judge, "kappa": kappa}
