"""How many sandbox workers a step starts: the recipe's `gate execution { workers N }`."""

from __future__ import annotations

import os

__all__ = ["sandbox_workers"]


def sandbox_workers(recipe, console=None) -> int:
    """The recipe's sandbox pool size, with a warning when the machine has fewer CPUs.

    More workers than CPUs still runs, only slower (and a timeout is wall-clock, so a
    starved candidate can time out): the warning names the setting to lower.
    """
    workers = recipe.gates.execution.workers
    cpus = os.cpu_count() or 1
    if workers > cpus and console is not None:
        console.print(f"[yellow]![/] sandbox: `gate execution {{ workers {workers} }}` on a machine with {cpus} "
                      f"CPU(s); wall-clock timeouts may fire on starved candidates. Lower `workers` to {cpus} "
                      "in this profile")
    return workers
