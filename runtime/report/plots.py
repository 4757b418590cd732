"""PNG plots: per-metric bars per arm with CI error bars, and training curves."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["plot_metric_bars", "plot_training_curves"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})   # no version stamp: same inputs, same bytes


def plot_metric_bars(table: dict, out_dir: Path) -> list[str]:
    """One bar chart per metric: a bar per arm with its 95% CI."""
    plt = _pyplot()
    written = []
    for row in table["rows"]:
        arms = [a for a in table["arms"] if row["arms"][a].get("value") is not None]
        if not arms:
            continue
        values = [row["arms"][a]["value"] for a in arms]
        lows = [max(0.0, v - row["arms"][a]["ci"][0]) for a, v in zip(arms, values)]
        highs = [max(0.0, row["arms"][a]["ci"][1] - v) for a, v in zip(arms, values)]
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.bar(arms, values, yerr=[lows, highs], capsize=4, color="#4c72b0")
        ax.set(title=row["label"], ylabel=row["metric"])
        name = f"metric_{row['metric']}.png"
        _save(fig, out_dir / name)
        plt.close(fig)
        written.append(name)
    return written


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot_training_curves(run_dir: Path, out_dir: Path) -> list[str]:
    """SFT loss and GRPO reward (total and components) against step, when logged."""
    plt = _pyplot()
    written = []
    curves = {
        # One SFT curve per arm: the stripped (craft) arm and the stuffed baseline.
        "training_sft_loss.png": (run_dir / "sft" / "craft" / "metrics.jsonl", ["loss"]),
        "training_sft_stuffed_loss.png": (run_dir / "sft" / "stuffed" / "metrics.jsonl", ["loss"]),
        "training_grpo_reward.png": (run_dir / "grpo" / "metrics.jsonl",
                                     ["reward", "rewards/outcome/mean", "rewards/process/mean",
                                      "rewards/consistency/mean", "rewards/judge/mean"]),
    }
    for name, (path, keys) in curves.items():
        history = _read_jsonl(path)
        fig, ax = plt.subplots(figsize=(5, 3))
        drawn = False
        for key in keys:
            points = [(h["step"], h[key]) for h in history if key in h and "step" in h]
            if points:
                ax.plot(*zip(*points), label=key, linewidth=1)
                drawn = True
        if drawn:
            ax.set(xlabel="step", title=name[:-4].replace("_", " "))
            ax.legend(fontsize=6)
            _save(fig, out_dir / name)
            written.append(name)
        plt.close(fig)
    return written
