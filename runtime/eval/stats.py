"""Confidence intervals.

The evaluation's intervals are clustered normal intervals (Evan Miller, "Adding Error
Bars to Evals", arXiv 2411.00640): a metric's units (user turns) come in clusters (the
turns of one conversation share its instance, its parameters and its history), so they
are not independent draws, and the standard error adds up each cluster's residuals
before squaring them: ``clustered_mean``, ``paired_clustered_difference`` (two arms on
the same questions), ``minimum_detectable_difference`` and ``replicate_summary``
(several training runs scored on the same questions).

Wilson intervals for rates and a seeded percentile bootstrap for means and cost ratios
(``wilson``, ``bootstrap_mean``, ``paired_ratio``, ``paired_difference``) remain for
their callers.
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist

__all__ = ["wilson", "bootstrap_mean", "paired_ratio", "paired_difference", "clustered_mean",
           "paired_clustered_difference", "minimum_detectable_difference", "replicate_summary"]

Z95 = 1.959964      # two-sided 95% normal quantile


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


def _clip(low: float, high: float, bounds: tuple[float | None, float | None] | None) -> list[float]:
    if bounds is not None:
        lo, hi = bounds
        if lo is not None:
            low, high = max(lo, low), max(lo, high)
        if hi is not None:
            low, high = min(hi, low), min(hi, high)
    return [round(low, 6), round(high, 6)]


def _clustered(values: list[float], clusters: list) -> tuple[float, float]:
    """Mean and clustered standard error of non-empty ``values``."""
    n = len(values)
    mean = sum(values) / n
    residuals: dict = {}
    for value, cluster in zip(values, clusters):
        residuals[cluster] = residuals.get(cluster, 0.0) + (value - mean)
    return mean, math.sqrt(sum(r * r for r in residuals.values())) / n


def clustered_mean(values: list[float], clusters: list, z: float = Z95,
                   bounds: tuple[float | None, float | None] | None = (0.0, 1.0)) -> dict:
    """Mean of ``values`` with a clustered standard error and normal interval.

    ``clusters[i]`` names the cluster of ``values[i]`` (for user turns: the instance id
    of their conversation). With ``n`` units, mean ``m`` and clusters ``c``::

        se = sqrt( sum_c ( sum_{i in c} (s_i - m) )**2 ) / n
        ci = m -+ z * se, clipped to ``bounds``

    which is the independent-units standard error ``sqrt(sum_i (s_i - m)**2) / n`` plus
    the cross terms ``(s_i - m)(s_j - m)`` of units sharing a cluster: positively
    correlated units (turns of one conversation that fail together) widen the interval.
    With every unit its own cluster it is the plain CLT standard error (dividing by
    ``n``, not ``n - 1``). One cluster gives ``se`` 0: the between-cluster variance is
    not observable, read ``clusters`` before reading the interval.

    Args:
        values: One score per unit (0/1 for a rate).
        clusters: One hashable cluster label per unit, as long as ``values``.
        z: Normal quantile of the interval (95% two-sided by default).
        bounds: ``(low, high)`` the interval is clipped to; ``(0.0, 1.0)`` for rates,
            ``(0.0, None)`` for counts, None for no clipping.

    Returns:
        ``{value, se, ci: [lo, hi], n, clusters}``, rounded to 6 decimals; ``value``
        None, ``se`` 0 and ``ci`` ``[0.0, 0.0]`` when there are no units.

    Example:
        >>> clustered_mean([1, 1, 0, 0], ["a", "a", "b", "b"])
        {'value': 0.5, 'se': 0.353553, 'ci': [0.0, 1.0], 'n': 4, 'clusters': 2}
        >>> clustered_mean([1, 1, 0, 0], [1, 2, 3, 4])["se"]
        0.25
    """
    values, clusters = list(values), list(clusters)
    if len(values) != len(clusters):
        raise ValueError(f"{len(values)} values but {len(clusters)} cluster labels")
    if not values:
        return {"value": None, "se": 0.0, "ci": [0.0, 0.0], "n": 0, "clusters": 0}
    mean, se = _clustered([float(v) for v in values], clusters)
    return {"value": round(mean, 6), "se": round(se, 6), "ci": _clip(mean - z * se, mean + z * se, bounds),
            "n": len(values), "clusters": len(set(clusters))}


def paired_clustered_difference(a: list[float | None], b: list[float | None], clusters: list, z: float = Z95,
                                bounds: tuple[float | None, float | None] | None = None) -> dict:
    """Mean of ``a_i - b_i`` over the units both arms scored, with a clustered interval and p-value.

    ``a[i]``, ``b[i]`` and ``clusters[i]`` describe the same unit (a question both arms
    answered); a unit where either score is None is left out. The differences are
    summarised exactly as ``clustered_mean`` does (the question's difficulty cancels
    out in each difference, which is what makes a paired comparison tighter than two
    separate intervals). ``p_value`` is the two-sided normal p-value of "no
    difference": ``erfc(|mean| / se / sqrt(2))``; with ``se`` 0 it is 1.0 when the mean
    difference is 0 and None otherwise (no variance to test against).

    Returns:
        ``{value, se, ci: [lo, hi], n, clusters, p_value}``, rounded to 6 decimals;
        ``value`` and ``p_value`` None when no unit was scored by both arms.

    Example:
        >>> paired_clustered_difference([1, 1, 0, 1], [0, 0, 0, 1], ["a", "a", "b", "b"])
        {'value': 0.5, 'se': 0.353553, 'ci': [-0.192952, 1.192952], 'n': 4, 'clusters': 2, 'p_value': 0.157299}
    """
    a, b, clusters = list(a), list(b), list(clusters)
    if not len(a) == len(b) == len(clusters):
        raise ValueError(f"{len(a)} and {len(b)} scores but {len(clusters)} cluster labels")
    kept = [(float(x) - float(y), c) for x, y, c in zip(a, b, clusters) if x is not None and y is not None]
    if not kept:
        return {"value": None, "se": 0.0, "ci": [0.0, 0.0], "n": 0, "clusters": 0, "p_value": None}
    differences, labels = [d for d, _ in kept], [c for _, c in kept]
    mean, se = _clustered(differences, labels)
    if se > 0:
        p_value = math.erfc(abs(mean) / se / math.sqrt(2))
    else:
        p_value = 1.0 if mean == 0 else None
    return {"value": round(mean, 6), "se": round(se, 6), "ci": _clip(mean - z * se, mean + z * se, bounds),
            "n": len(differences), "clusters": len(set(labels)),
            "p_value": None if p_value is None else round(p_value, 6)}


def minimum_detectable_difference(se: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a two-sided test at ``alpha`` detects with ``power``.

    ``(z_{1 - alpha/2} + z_{power}) * se``, with ``se`` the standard error of the
    difference (``paired_clustered_difference``); 2.801585 standard errors at the
    defaults. A difference below it going undetected says little about there being none.

    Example:
        >>> minimum_detectable_difference(0.1)
        0.280159
    """
    normal = NormalDist()
    return round((normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)) * se, 6)


def replicate_summary(replicate_means: list[float], sampling_se: float, z: float = Z95,
                      bounds: tuple[float | None, float | None] | None = (0.0, 1.0)) -> dict:
    """One metric over R training replicates scored on the same questions.

    A score moves for two reasons: which questions were drawn (``sampling_se``, the
    clustered standard error of one replicate's mean, e.g. ``clustered_mean(...)["se"]``)
    and which model a training run happened to produce (seed, data order: the spread of
    the replicates' means). The mean of R replicates carries the question-sampling error
    once (the questions are shared, so averaging replicates does not shrink it) and the
    training noise divided by R::

        se = sqrt(sampling_se**2 + sd**2 / R)      sd: sample sd (R - 1) of the means

    With R = 1, ``sd`` is 0 and the training noise is unseen, not absent.

    Returns:
        ``{mean, sd, min, max, replicates, se, ci: [lo, hi]}`` rounded to 6 decimals;
        ``mean``, ``min`` and ``max`` None with no replicates.

    Example:
        >>> replicate_summary([0.5, 0.7], 0.0)
        {'mean': 0.6, 'sd': 0.141421, 'min': 0.5, 'max': 0.7, 'replicates': 2, 'se': 0.1, 'ci': [0.404004, 0.795996]}
    """
    means = [float(m) for m in replicate_means]
    r = len(means)
    if not r:
        return {"mean": None, "sd": 0.0, "min": None, "max": None, "replicates": 0,
                "se": round(sampling_se, 6), "ci": [0.0, 0.0]}
    mean = sum(means) / r
    sd = math.sqrt(sum((m - mean) ** 2 for m in means) / (r - 1)) if r > 1 else 0.0
    se = math.sqrt(sampling_se ** 2 + sd ** 2 / r)
    return {"mean": round(mean, 6), "sd": round(sd, 6), "min": round(min(means), 6), "max": round(max(means), 6),
            "replicates": r, "se": round(se, 6), "ci": _clip(mean - z * se, mean + z * se, bounds)}
