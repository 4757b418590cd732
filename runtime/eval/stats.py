"""Confidence intervals: Wilson for rates, a seeded percentile bootstrap for means and ratios."""

from __future__ import annotations

import math
import random

__all__ = ["wilson", "bootstrap_mean", "paired_ratio", "paired_difference"]


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval of a rate.

    Example:
        >>> tuple(round(x, 4) for x in wilson(8, 10))
        (0.4902, 0.9433)
        >>> wilson(0, 0)
        (0.0, 0.0)
    """
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_mean(values: list[float], seed: int = 0, resamples: int = 2000) -> tuple[float, float]:
    """95% percentile bootstrap interval of a mean, seeded so reruns give the same bytes.

    Example:
        >>> bootstrap_mean([1.0, 1.0, 1.0])
        (1.0, 1.0)
    """
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return (means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1])


def paired_ratio(pairs: list[tuple[float, float]], seed: int = 0, resamples: int = 2000) -> dict:
    """Ratio of two arms' means over the same instances, with a paired 95% bootstrap interval.

    ``pairs`` holds one ``(arm, baseline)`` value per instance that both arms ran. The
    ratio is ``sum(arm) / sum(baseline)``; each resample draws instances once and uses
    them for both arms, so an instance's difficulty cancels out. Resamples whose
    baseline sum is 0 have no ratio and are counted in ``dropped``; a baseline that is
    0 on every instance gives ``value`` None (a ratio against nothing is not shown).

    Example:
        >>> paired_ratio([(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)])
        {'value': 0.5, 'ci': [0.5, 0.5], 'n': 3, 'dropped': 0}
        >>> paired_ratio([(1.0, 0.0)])["value"] is None
        True
    """
    n = len(pairs)
    base = sum(b for _, b in pairs)
    if not n or not base:
        return {"value": None, "ci": [0.0, 0.0], "n": n, "dropped": 0}
    rng = random.Random(seed)
    ratios, dropped = [], 0
    for _ in range(resamples):
        drawn = [pairs[rng.randrange(n)] for _ in range(n)]
        denominator = sum(b for _, b in drawn)
        if denominator:
            ratios.append(sum(a for a, _ in drawn) / denominator)
        else:
            dropped += 1
    ratios.sort()
    kept = len(ratios)
    if not kept:       # every resample missed the few instances with a baseline cost
        return {"value": round(sum(a for a, _ in pairs) / base, 6), "ci": [0.0, 0.0], "n": n, "dropped": dropped}
    return {"value": round(sum(a for a, _ in pairs) / base, 6),
            "ci": [round(ratios[int(0.025 * kept)], 6), round(ratios[max(int(0.975 * kept) - 1, 0)], 6)],
            "n": n, "dropped": dropped}


def paired_difference(pairs: list[tuple[float, float]], seed: int = 0, resamples: int = 2000) -> dict:
    """Mean of ``arm - baseline`` over the same instances, with a paired 95% bootstrap interval.

    What a cost comparison can still say when the baseline is 0 on every instance and a
    ratio has no denominator (``paired_ratio`` gives None there).

    Example:
        >>> paired_difference([(1.0, 0.0), (1.0, 0.0)])
        {'value': 1.0, 'ci': [1.0, 1.0], 'n': 2}
    """
    differences = [a - b for a, b in pairs]
    if not differences:
        return {"value": None, "ci": [0.0, 0.0], "n": 0}
    low, high = bootstrap_mean(differences, seed, resamples)
    return {"value": round(sum(differences) / len(differences), 6), "ci": [round(low, 6), round(high, 6)],
            "n": len(differences)}
