"""The results table: each arm's figures and its deltas against the stuffed baseline.

Rates get deltas in percentage points; cost metrics (input tokens, discovery loops)
get ratios, next to the published ratios (input tokens 0.11x, discovery loops 0.20x).
"""

from __future__ import annotations

__all__ = ["COST_METRICS", "PUBLISHED_RATIOS", "ROWS", "build_table", "markdown_table"]

PUBLISHED_RATIOS = {"input_tokens": 0.11, "discovery_loops": 0.20}
# (metric, label, kind): kind "rate" shows % and a delta in pp; "cost" shows a ratio.
ROWS = (
    ("agent_score", "Agent score", "rate"),
    ("final_answer_accuracy", "Final-answer accuracy", "rate"),
    ("execution_success", "Execution success", "rate"),
    ("consistency", "Plan/code consistency", "rate"),
    ("multi_turn_coherence", "Multi-turn coherence", "rate"),
    ("input_tokens", "Input tokens / call", "cost"),
    ("discovery_loops", "Discovery loops / turn", "cost"),
)
COST_METRICS = tuple(metric for metric, _, kind in ROWS if kind == "cost")


def build_table(eval_results: dict, baseline: str = "stuffed", split: str = "all", ratios: dict | None = None) -> dict:
    """Rows of ``{metric, label, kind, arms: {arm: {value, ci, delta_pp | ratio}}}``.

    ``ratios`` (``{metric: {arm: paired_ratio}}``, from the episodes) gives a cost ratio
    its paired interval (``ratio_ci``); without it the ratio is the ratio of the means.
    Where the baseline's cost is 0 there is no ratio: the cell says so (``no_ratio``) and
    carries the paired difference from the episodes (``difference``, ``difference_ci``).
    """
    arms = list(eval_results)
    rows = []
    for metric, label, kind in ROWS:
        base = eval_results.get(baseline, {}).get(split, {}).get(metric, {}).get("value")
        cells = {}
        for arm in arms:
            cell = dict(eval_results[arm].get(split, {}).get(metric, {"value": None, "ci": [0, 0], "n": 0}))
            value = cell.get("value")
            if arm != baseline and value is not None and base is not None:
                if kind == "rate":
                    cell["delta_pp"] = round(100 * (value - base), 2)
                else:
                    cell["ratio"] = round(value / base, 4) if base else None
                    paired = (ratios or {}).get(metric, {}).get(arm)
                    if paired and paired["value"] is not None:
                        cell["ratio"], cell["ratio_ci"] = round(paired["value"], 4), paired["ci"]
                    elif cell["ratio"] is None:
                        cell["no_ratio"] = f"{baseline} is 0"
                        difference = (paired or {}).get("difference")
                        if difference and difference["value"] is not None:
                            cell["difference"], cell["difference_ci"] = difference["value"], difference["ci"]
            cells[arm] = cell
        row = {"metric": metric, "label": label, "kind": kind, "arms": cells}
        if metric in PUBLISHED_RATIOS:
            row["published_ratio"] = PUBLISHED_RATIOS[metric]
        rows.append(row)
    # `eval { baseline none }`: no arm to be measured against, and the table says so.
    return {"baseline": baseline if baseline in arms else None, "split": split, "arms": arms, "rows": rows}


def _cell_text(cell: dict, kind: str) -> str:
    value = cell.get("value")
    if value is None:
        return f"n/a: {cell['why']}" if cell.get("why") else "n/a"
    low, high = cell.get("ci", [0, 0])
    if kind == "rate":
        text = f"{100 * value:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"
        if "delta_ci_pp" in cell:       # the paired difference, with its clustered interval
            low_d, high_d = cell["delta_ci_pp"]
            text += f" ({cell['delta_pp']:+.1f} pp [{low_d:+.1f}, {high_d:+.1f}])"
        elif "delta_pp" in cell:
            text += f" ({cell['delta_pp']:+.1f} pp)"
    else:
        text = f"{value:.1f} [{low:.1f}, {high:.1f}]"
        if cell.get("ratio") is not None and "ratio_ci" in cell:
            text += f" ({cell['ratio']:.3f}x [{cell['ratio_ci'][0]:.3f}, {cell['ratio_ci'][1]:.3f}])"
        elif cell.get("ratio") is not None:
            text += f" ({cell['ratio']:.2f}x)"
        elif "difference" in cell:
            low, high = cell["difference_ci"]
            text += f" ({cell['difference']:+.2f} [{low:+.2f}, {high:+.2f}]; no ratio: {cell['no_ratio']})"
        elif "no_ratio" in cell:
            text += f" (no ratio: {cell['no_ratio']})"
    return text


def markdown_table(table: dict) -> str:
    """The table as Markdown, one column per arm, plus the published ratio column."""
    arms = table["arms"]
    head = "| Metric | " + " | ".join(arms) + " | Published |"
    lines = [head, "|" + " --- |" * (len(arms) + 2)]
    for row in table["rows"]:
        published = f"{row['published_ratio']:.2f}x" if "published_ratio" in row else ""
        lines.append(f"| {row['label']} | " + " | ".join(_cell_text(row["arms"][a], row["kind"]) for a in arms)
                     + f" | {published} |")
    return "\n".join(lines) + "\n"
