"""Confidence intervals: Wilson for rates, a seeded percentile bootstrap for means."""

from __future__ import annotations

import math
import random

__all__ = ["wilson", "bootstrap_mean"]


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
