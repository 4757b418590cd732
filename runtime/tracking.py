"""Experiment tracking: the recipe's `track` setting, for the trainers and for every step.

The trainers log through TRL: `trl_config.json` carries `report_to` (the tracker), the
step adds `run_name` (recipe, stage, SFT arm and the plan hash; :func:`run_name`) unless
the stage's `trl` block sets one, and
:func:`use_tracker_dir` points the tracker's local files into the trainer's output
dir before the trainer starts. Every step's own metrics (the gate's funnel, GRPO's
rewards before and after, eval's table) go to the same tracker through
:func:`log_step_metrics`, which the runner calls when a step finishes. Local files live
in `<step dir>/tracking/` (a trainer's: `<its out dir>/tracking/`), so
`tensorboard --logdir RUN_DIR` shows a whole run; the runner leaves `tracking/` out of
a step's outputs hash, since event files carry wall-clock times.

`tensorboard` (the default) and `trackio` keep everything on this machine; `wandb` and
`mlflow` log where their own environment variables say (WANDB_MODE, MLFLOW_TRACKING_URI),
defaulting to files under `tracking/`.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

__all__ = ["TRACKING_DIR", "run_name", "TrackingError", "require_tracker", "use_tracker_dir", "log_step_metrics",
           "flat_scalars", "read_scalars"]

TRACKING_DIR = "tracking"
# Tracker -> the package that implements it.
_PACKAGES = {"tensorboard": "tensorboard", "trackio": "trackio", "wandb": "wandb", "mlflow": "mlflow"}


# Tracker locations the user set before craft ran: those win over craft's defaults.
_USER_ENV = {key: os.environ.get(key) for key in
             ("TENSORBOARD_LOGGING_DIR", "TRACKIO_DIR", "WANDB_DIR", "MLFLOW_TRACKING_URI")}


class TrackingError(RuntimeError):
    """The recipe's tracker cannot log here; the message names the package to install."""


def run_name(recipe: str, stage: str, plan_hash: str, arm: str | None = None) -> str:
    """The tracker's run name of a stage: two runs share it exactly when they ran the same plan.

    Example:
        >>> run_name("ads_analytics", "sft", "97ffc7804e0123", "craft")
        'ads_analytics-sft-craft-97ffc7804e'
    """
    return "-".join(p for p in (recipe, stage, arm, plan_hash[:10]) if p)


def require_tracker(track: str) -> None:
    """Fail before a step starts when the tracker's package is missing."""
    package = _PACKAGES.get(track)
    if package is not None and importlib.util.find_spec(package) is None:
        raise TrackingError(f"the recipe logs to `track {track}` and `{package}` is not installed: "
                            f"`pip install {package}`, or set `track none`")


def use_tracker_dir(track: str, out_dir: str | os.PathLike) -> Path:
    """Point the tracker's local files at `out_dir/tracking` (a user's own setting wins)."""
    where = Path(out_dir) / TRACKING_DIR
    env = {"tensorboard": {"TENSORBOARD_LOGGING_DIR": str(where)},
           "trackio": {"TRACKIO_DIR": str(where)},
           "wandb": {"WANDB_DIR": str(where)},
           "mlflow": {"MLFLOW_TRACKING_URI": where.resolve().as_uri()}}.get(track, {})
    for key, value in env.items():
        # Set each time (not setdefault): a second trainer in the same process logs to its own dir.
        os.environ[key] = _USER_ENV.get(key) or value
    if env:
        where.mkdir(parents=True, exist_ok=True)
    return where


def flat_scalars(metrics: dict, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of nested metrics, keyed by their `/`-joined path.

    Example:
        >>> flat_scalars({"accepted": 3, "funnel": {"gate1": 0.5}, "teacher": "synthetic", "ok": True})
        {'accepted': 3.0, 'funnel/gate1': 0.5}
    """
    out: dict[str, float] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_scalars(value, f"{name}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
    return dict(sorted(out.items()))


def log_step_metrics(track: str, step_dir: str | os.PathLike, project: str, run_name: str,
                     metrics: dict, step: int = 0) -> dict[str, float]:
    """Log a step's numeric metrics to the tracker; returns what was logged."""
    scalars = flat_scalars(metrics)
    if track == "none" or not scalars:
        return scalars
    where = Path(step_dir) / TRACKING_DIR
    where.mkdir(parents=True, exist_ok=True)
    if track == "tensorboard":
        from torch.utils.tensorboard import SummaryWriter

        with SummaryWriter(log_dir=str(where)) as writer:
            for tag, value in scalars.items():
                writer.add_scalar(tag, value, step)
    elif track == "trackio":
        import trackio

        os.environ["TRACKIO_DIR"] = _USER_ENV["TRACKIO_DIR"] or str(where)
        trackio.init(project=project, name=run_name)
        trackio.log(scalars, step=step)
        trackio.finish()
    elif track == "wandb":
        import wandb

        with wandb.init(project=project, name=run_name, dir=str(where)) as run:
            run.log(scalars, step=step)
    elif track == "mlflow":
        import mlflow

        os.environ["MLFLOW_TRACKING_URI"] = _USER_ENV["MLFLOW_TRACKING_URI"] or where.resolve().as_uri()
        with mlflow.start_run(run_name=run_name):
            mlflow.log_metrics(scalars, step=step)
    return scalars


def read_scalars(log_dir: str | os.PathLike) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the tensorboard event files under `log_dir`: tag -> [(step, value)].

    Example (not run here: needs a run's tensorboard logs)::

        read_scalars("runs/ads_analytics/grpo/tracking")["train/rewards/outcome/mean"]
        # [(1, 0.25), (2, 0.5)]
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, list[tuple[int, float]]] = {}
    for events in sorted({p.parent for p in Path(log_dir).rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            found.setdefault(tag, []).extend((e.step, e.value) for e in acc.Scalars(tag))
    return found
