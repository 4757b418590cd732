"""The reward curves a GRPO run leaves next to its model: total and each component per step."""

from __future__ import annotations

from pathlib import Path

__all__ = ["plot_curves", "plot_measured"]


def plot_curves(log_history: list[dict], components: tuple[str, ...], out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for name, key in [("total", "reward")] + [(c, f"rewards/{c}/mean") for c in components]:
        points = [(h["step"], h[key]) for h in log_history if key in h]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(*zip(*points), marker="o", markersize=2)
        ax.set(xlabel="step", ylabel=key, title=f"GRPO reward: {name}")
        fig.tight_layout()
        fig.savefig(out / f"reward_{name}.png", dpi=80, metadata={"Software": None})
        plt.close(fig)
        written.append(f"reward_{name}.png")
    return written


def plot_measured(curve: list[dict], measured_on: str, out: Path) -> list[str]:
    """The measured rows' greedy R_total, outcome and execution success over the steps; no
    plot when nothing was measured (`measure 0`)."""
    if not any("total" in point for point in curve):
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    for key in ("total", "outcome", "exec_success"):
        points = [(p["step"], p[key]) for p in curve if key in p]
        if points:
            ax.plot(*zip(*points), marker="o", markersize=3, label=key)
    ax.set(xlabel="step", ylabel="mean over the measured rows", ylim=(0, 1),
           title=f"GRPO: greedy score on {measured_on}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "measured_score.png", dpi=80, metadata={"Software": None})
    plt.close(fig)
    return ["measured_score.png"]
