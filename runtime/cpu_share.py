"""Whether a step had the machine to itself: the CPU other processes used while it ran.

A step's wall time is its cost only on a quiet machine. On two cores, a second run, a test
suite or a build beside it slows every step, and a run that shares its cores with another
run's threads can take several times as long as both in turn. The runner measures, around
each step, the machine's busy CPU time and this process tree's own (its children counted
once they end, as every step's are by the time it returns); the rest went to other
processes. Its share of the machine's CPU time is written in the step's manifest as
``other_cpu_share``, and a large one is said on the console and beside the report's timing
line, so a timing measured under load is never read as a cost.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

__all__ = ["BUSY_SHARE", "CpuShare", "busy_steps_note", "other_share", "under_load"]

# Above this share of the machine's CPU time going to other processes, a step's wall time
# is said to be measured under load. Background daemons on a quiet machine take under 2%.
BUSY_SHARE = 0.10
# Shorter steps are not judged: a second's sample is mostly noise.
MIN_WALL_S = 10.0


def _busy_cpu_s() -> float:
    """Seconds of CPU time the whole machine spent busy since boot (all cores summed)."""
    import psutil

    t = psutil.cpu_times()
    # Guest time is already in user time on Linux; steal (another VM's) is not this machine's.
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))


def _own_cpu_s() -> float:
    """CPU seconds of this process and of its children that have ended (and theirs)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def other_share(busy_s: float, own_s: float, wall_s: float, cores: int) -> float:
    """The share of the machine's CPU time (``wall_s`` on ``cores``) that other processes used.

    >>> other_share(busy_s=250.0, own_s=200.0, wall_s=100.0, cores=2)
    0.25
    >>> other_share(busy_s=190.0, own_s=200.0, wall_s=100.0, cores=2)   # own counted, not busy: 0
    0.0
    >>> other_share(busy_s=5.0, own_s=0.0, wall_s=0.0, cores=2)
    0.0
    """
    if wall_s <= 0 or cores <= 0:
        return 0.0
    return round(min(1.0, max(0.0, (busy_s - own_s) / (wall_s * cores))), 3)


@dataclass
class CpuShare:
    """Start it before a step, read :meth:`stop` after: the step's ``other_cpu_share``."""

    cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    _busy: float = field(default_factory=_busy_cpu_s)
    _own: float = field(default_factory=_own_cpu_s)
    _started: float = field(default_factory=time.perf_counter)

    def stop(self) -> float:
        wall_s = time.perf_counter() - self._started
        return other_share(_busy_cpu_s() - self._busy, _own_cpu_s() - self._own, wall_s, self.cores)


def under_load(share: float, wall_s: float) -> bool:
    """Whether a step's wall time was measured beside other work (the console and the report
    both ask this one question).

    >>> under_load(0.48, 600.0), under_load(0.02, 600.0), under_load(0.9, 1.0)
    (True, False, False)
    """
    return share >= BUSY_SHARE and wall_s >= MIN_WALL_S


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def busy_steps_note(shares: dict[str, float], walls: dict[str, float]) -> str | None:
    """The steps measured under load, as a clause for the timing line; None if none was.

    >>> busy_steps_note({"world": 0.9, "sft": 0.48, "grpo": 0.12, "eval": 0.01},
    ...                 {"world": 1.0, "sft": 600.0, "grpo": 200.0, "eval": 300.0})
    'sft and grpo ran beside other work (other processes took 48% and 12% of the CPU), so their times are not their cost alone'
    >>> busy_steps_note({"sft": 0.02}, {"sft": 600.0}) is None
    True
    """
    busy = [s for s, share in shares.items() if under_load(share, walls.get(s, 0.0))]
    if not busy:
        return None
    took = _listed([f"{shares[s]:.0%}" for s in busy])
    own = "their times are not their cost alone" if len(busy) > 1 else "its time is not its cost alone"
    return f"{_listed(busy)} ran beside other work (other processes took {took} of the CPU), so {own}"
