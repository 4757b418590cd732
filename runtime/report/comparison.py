"""Arm against arm: paired differences with clustered intervals, and training replicates.

Every comparison pairs the arms over the same user turns (a turn both arms were scored
on), so a question's difficulty cancels out of each difference; its interval is
clustered by conversation (``runtime.eval.stats``, after "Adding Error Bars to Evals").
Each difference carries the smallest difference its split detects at 80% power
(``mde``), so a difference the split cannot see is not read as no difference.

With ``craftc run --replicates N`` each arm is trained N times on the same data; the
replicate table gives each arm's mean over the replicates, their spread, and an
interval that counts the questions drawn and the training noise both
(``runtime.eval.stats.replicate_summary``).
"""

from __future__ import annotations

from runtime.eval.metrics import paired_metric, turn_scores
from runtime.eval.stats import clustered_mean, paired_clustered_difference, replicate_summary

__all__ = ["COMPARED_METRICS", "arm_pairs", "paired_differences", "run_differences", "replicate_results", "markdown_differences",
           "markdown_replicates", "difference_text", "METRIC_LABELS"]

# The metrics compared arm against arm: what an agent is for, and whether its code runs.
COMPARED_METRICS = ("agent_score", "execution_success")


def arm_pairs(arms: list[str], baseline: str = "stuffed") -> list[tuple[str, str]]:
    """The comparisons a report makes: craft against each other arm, then every other
    arm against the baseline.

    >>> arm_pairs(["craft", "sft_only", "stuffed"])
    [('craft', 'sft_only'), ('craft', 'stuffed'), ('sft_only', 'stuffed')]
    """
    pairs = [("craft", other) for other in arms if other != "craft"] if "craft" in arms else []
    pairs += [(arm, baseline) for arm in arms if arm not in ("craft", baseline) and baseline in arms]
    return pairs


def paired_differences(episodes: dict[str, list], kinds: tuple[str, ...] = (), baseline: str = "stuffed") -> dict:
    """``{split: [{a, b, metric, value, ci, se, n, clusters, p_value, mde}]}`` over all
    scored turns (``all``) and each held-out kind in ``kinds`` that has episodes."""
    out: dict[str, list[dict]] = {}
    for split in ("all", *kinds):
        chosen = {arm: [e for e in eps if split == "all" or e.split == split] for arm, eps in episodes.items()}
        if not any(chosen.values()):
            continue
        rows = []
        for a, b in arm_pairs(list(episodes), baseline):
            for metric in COMPARED_METRICS:
                row = {"a": a, "b": b, "metric": metric, **paired_metric(chosen[a], chosen[b], metric)}
                if not row["se"]:       # the arms never differ on a turn: no variance to size a test with
                    row["mde"] = None
                rows.append(row)
        out[split] = rows
    return out


def run_differences(a: list, b: list, kinds: tuple[str, ...] = (), names: tuple[str, str] = ("A", "B")) -> dict:
    """One arm of run A against one arm of run B, paired over the turns both scored.

    What an ablation needs: two runs that differ in one setting, scored on the same
    split, compared turn by turn (``paired_metric``) over all turns and each kind in
    ``kinds``. Returns :func:`paired_differences`'s form, the rows named by ``names``.
    """
    out: dict[str, list[dict]] = {}
    for split in ("all", *kinds):
        chosen = [[e for e in eps if split == "all" or e.split == split] for eps in (a, b)]
        if not all(chosen):
            continue
        rows = []
        for metric in COMPARED_METRICS:
            row = {"a": names[0], "b": names[1], "metric": metric, **paired_metric(chosen[0], chosen[1], metric)}
            if not row["se"]:
                row["mde"] = None
            rows.append(row)
        out[split] = rows
    return out


def _mean_scores(replicates: list[dict[str, list]], arm: str, metric: str) -> dict[tuple[str, int], float]:
    """Each unit's score averaged over the replicates that scored it."""
    sums: dict[tuple[str, int], list[float]] = {}
    for episodes in replicates:
        for key, value in turn_scores(episodes[arm], metric).items():
            sums.setdefault(key, []).append(value)
    return {key: sum(values) / len(values) for key, values in sums.items()}


def replicate_results(replicates: list[dict[str, list]], metric: str = "agent_score",
                      baseline: str = "stuffed") -> dict:
    """Each arm's ``metric`` over training replicates, and each pair's difference.

    ``replicates``: one ``{arm: episodes}`` per replicate, all on the same questions.
    The sampling error is the clustered standard error of the per-turn scores averaged
    over the replicates; ``replicate_summary`` adds the spread of the replicates' means.

    Returns:
        ``{metric, replicates, arms: {arm: {per_replicate, mean, sd, min, max, se, ci}},
        differences: [{a, b, per_replicate, mean, sd, min, max, se, ci, mde}]}``.
    """
    from runtime.eval.stats import minimum_detectable_difference

    arms = list(replicates[0])
    out: dict = {"metric": metric, "replicates": len(replicates), "arms": {}, "differences": []}
    for arm in arms:
        per = []
        for episodes in replicates:
            scores = turn_scores(episodes[arm], metric)
            per.append(sum(scores.values()) / len(scores) if scores else 0.0)
        averaged = _mean_scores(replicates, arm, metric)
        keys = sorted(averaged)
        sampling = clustered_mean([averaged[k] for k in keys], [k[0] for k in keys])["se"]
        out["arms"][arm] = {"per_replicate": [round(v, 6) for v in per], **replicate_summary(per, sampling)}
    for a, b in arm_pairs(arms, baseline):
        per = [paired_metric(episodes[a], episodes[b], metric)["value"] or 0.0 for episodes in replicates]
        mean_a, mean_b = _mean_scores(replicates, a, metric), _mean_scores(replicates, b, metric)
        keys = sorted(set(mean_a) & set(mean_b))
        sampling = paired_clustered_difference([mean_a[k] for k in keys], [mean_b[k] for k in keys],
                                               [k[0] for k in keys])["se"]
        summary = replicate_summary(per, sampling, bounds=(-1.0, 1.0))
        out["differences"].append({"a": a, "b": b, "per_replicate": [round(v, 6) for v in per], **summary,
                                   "mde": minimum_detectable_difference(summary["se"])})
    return out


def _pp(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f}"


def difference_text(row: dict) -> str:
    """One difference as the report writes it: ``+4.2 pp [+1.0, +7.4]``.

    >>> difference_text({"value": 0.042, "ci": [0.01, 0.074]})
    '+4.2 pp [+1.0, +7.4]'
    """
    if row.get("value") is None:
        return "n/a"
    return f"{_pp(row['value'])} pp [{_pp(row['ci'][0])}, {_pp(row['ci'][1])}]"


# How tables name a metric; the docs' tables (runtime.results_tables) use the same words.
METRIC_LABELS = {"agent_score": "agent score", "execution_success": "execution success"}


def markdown_differences(rows: list[dict]) -> str:
    """The paired-differences table: each arm minus arm over the same turns, clustered by conversation.

    The one rendering of it: report.md and `craftc compare` write it from the rows they
    compute, the docs (``runtime.results_tables``) from a digest, which keeps the same keys.

    >>> print(markdown_differences([{"a": "craft", "b": "stuffed", "metric": "agent_score", "value": 0.1,
    ...     "ci": [0.02, 0.18], "p_value": 0.01, "n": 40, "clusters": 20, "mde": 0.11}]), end="")
    | Comparison | Difference [95% CI] | p | Turns (conversations) | Detectable at 80% power |
    | --- | --- | --- | --- | --- |
    | craft - stuffed, agent score | +10.0 pp [+2.0, +18.0] | 0.010 | 40 (20) | 11.0 pp |
    """
    lines = ["| Comparison | Difference [95% CI] | p | Turns (conversations) | Detectable at 80% power |",
             "| --- | --- | --- | --- | --- |"]
    for row in rows:
        p = "n/a" if row.get("p_value") is None else f"{row['p_value']:.3f}"
        mde = "n/a (never differ)" if row.get("mde") is None else f"{100 * row['mde']:.1f} pp"
        lines.append(f"| {row['a']} - {row['b']}, {METRIC_LABELS.get(row['metric'], row['metric'])} | "
                     f"{difference_text(row)} | {p} | {row['n']} ({row['clusters']}) | {mde} |")
    return "\n".join(lines) + "\n"


def markdown_replicates(result: dict) -> str:
    """Each arm's mean over training replicates, and each paired difference's.

    The one rendering of a replicates table: report.md writes it from report.json, and the
    docs (``runtime.results_tables``) from a digest, which keeps the same keys.

    >>> print(markdown_replicates({"metric": "agent_score", "replicates": 2,
    ...     "arms": {"craft": {"per_replicate": [0.3, 0.4], "mean": 0.35, "sd": 0.07, "ci": [0.25, 0.45]}},
    ...     "differences": []}), end="")
    | Arm | Agent score, mean of 2 [95% CI] | SD | Per replicate |
    | --- | --- | --- | --- |
    | craft | 35.0% [25.0, 45.0] | 7.0 pp | 30.0%, 40.0% |
    """
    label = METRIC_LABELS.get(result["metric"], result["metric"]).capitalize()
    n = result["replicates"]
    lines = [f"| Arm | {label}, mean of {n} [95% CI] | SD | Per replicate |", "| --- | --- | --- | --- |"]
    for arm, row in result["arms"].items():
        lines.append(f"| {arm} | {100 * row['mean']:.1f}% [{100 * row['ci'][0]:.1f}, {100 * row['ci'][1]:.1f}] | "
                     f"{100 * row['sd']:.1f} pp | {', '.join(f'{100 * v:.1f}%' for v in row['per_replicate'])} |")
    if result["differences"]:
        lines += ["", f"| Comparison | {label} difference, mean of {n} [95% CI] | SD | Per replicate | "
                  "Detectable at 80% power |", "| --- | --- | --- | --- | --- |"]
        for row in result["differences"]:
            lines.append(f"| {row['a']} - {row['b']} | {difference_text({'value': row['mean'], 'ci': row['ci']})} | "
                         f"{100 * row['sd']:.1f} pp | {', '.join(_pp(v) for v in row['per_replicate'])} | "
                         f"{100 * row['mde']:.1f} pp |")
    return "\n".join(lines) + "\n"
