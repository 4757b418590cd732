"""Cores a finished arm frees go to the arms still training.

`stage sft { arms concurrent }` trains the stage's arms side by side, the machine's
cores divided between them (`launch.concurrent_threads`). They rarely finish together:
in the default profile the stuffed arm, on ~5,000-token examples, trains for minutes
after the stripped arm is done, on one core while the other idles. So the launcher
keeps the current share in a small file, named by `CORE_SHARE_ENV` to the trainers that
may take freed cores (`launch_stages_concurrently(..., takers=...)`: the stuffed arm),
and rewrites it whenever an arm exits; such a trainer reads it before every step and
calls `torch.set_num_threads` when it changed (`core_share_callback`). Takers train in
MKL's strict mode, so their floats do not depend on when that happened. The eval step's
processes of `eval { processes N }` follow the same file between batches (`take_share`).

A thread count the user pinned in `OMP_NUM_THREADS` is kept: the launcher then writes
no file. The changes a trainer made are in its `sft_summary.json`
(`cpu_threads_changes`).
"""

from __future__ import annotations

import os
from pathlib import Path

from craftc.atomic import write_atomic

__all__ = ["CORE_SHARE_ENV", "write_share", "read_share", "take_share", "core_share_callback"]

# The file's path, in each launched trainer's environment.
CORE_SHARE_ENV = "CRAFT_CORE_SHARE_FILE"


def write_share(path: str | os.PathLike, threads: int) -> None:
    """Set the CPU threads each running trainer should use (atomically: a reader sees old or new)."""
    write_atomic(Path(path), f"{int(threads)}\n")


def read_share(path: str | os.PathLike) -> int | None:
    """The share in `path`, or None when there is no file or it holds no positive whole number."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def take_share(path: str | os.PathLike) -> int | None:
    """Set torch's CPU threads to the share in `path` if it differs: the new count, or None when unchanged.

    A few bytes read per call; callers call it between steps or batches, which take tens of
    milliseconds or more (the sft trainers, and `eval { processes }`'s eval processes).
    """
    import torch

    threads = read_share(path)
    if threads is None or threads == torch.get_num_threads():
        return None
    torch.set_num_threads(threads)
    return threads


def core_share_callback(path: str | os.PathLike, phase: str, changes: list[dict]):
    """A `TrainerCallback` that follows the share file: `torch.set_num_threads` at the next step after a change.

    Args:
        path: The share file (`CORE_SHARE_ENV`).
        phase: A name for the changes it records (`"warm-up"`, `"main"`).
        changes: A list the callback appends `{"phase", "step", "threads"}` to.
    """
    from transformers import TrainerCallback   # here, so the launcher's import stays light

    class CoreShare(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            threads = take_share(path)
            if threads is not None:
                changes.append({"phase": phase, "step": state.global_step, "threads": threads})

    return CoreShare()
