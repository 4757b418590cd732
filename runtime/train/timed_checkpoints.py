"""Checkpoints by training time as well as by steps: `stage NAME { checkpoint_every 10m }`.

TRL saves every `save_steps` optimiser steps (the plan's trl_config.json: 500). On CPU a
step of a pretrained model takes seconds, so a run of a few hundred steps would be saved
only at its end and a kill would lose all of it. :func:`timed_checkpoints` asks the
trainer for a save at the first step end after ``every_s`` seconds of training since the
last save; the step-count saves go on as before. A save writes the model, optimiser,
scheduler and RNG states and draws nothing, so the trained weights are the same whether
or when a run saved (tests/train/test_timed_checkpoints.py).
"""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["TimeSinceSave", "timed_checkpoints"]


class TimeSinceSave:
    """Ask for a save at the first step end once ``every_s`` seconds have passed since the last save.

    The trainer events it needs; :func:`timed_checkpoints` makes it a `TrainerCallback`.
    ``every_s`` 0 turns it off. ``clock`` is for tests.

    >>> from types import SimpleNamespace as NS
    >>> now = [0.0]
    >>> timed = TimeSinceSave(60, clock=lambda: now[0])
    >>> control = NS(should_save=False)
    >>> timed.on_train_begin(None, None, control); now[0] = 59.0
    >>> timed.on_step_end(None, None, control).should_save
    False
    >>> now[0] = 61.0
    >>> timed.on_step_end(None, None, control).should_save
    True
    >>> _ = timed.on_save(None, None, control); control.should_save = False; now[0] = 100.0
    >>> timed.on_step_end(None, None, control).should_save
    False
    """

    def __init__(self, every_s: float, clock: Callable[[], float] = time.monotonic):
        self.every_s = float(every_s)
        self.clock = clock
        self.last = clock()

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = self.clock()        # a resumed run counts from its own start

    def on_step_end(self, args, state, control, **kwargs):
        due = self.every_s > 0 and self.clock() - self.last >= self.every_s
        if getattr(args, "world_size", 1) > 1:
            # Each process reads its own clock; a save is collective (sharded weights are
            # gathered), so all of them must save at the same step or they wait forever.
            due = _due_on_any_rank(due, args.device)
        if due:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        self.last = self.clock()        # a step-count save restarts the clock too
        return control


def _due_on_any_rank(due: bool, device) -> bool:
    """True on every process when it is due on any (one all-reduce of a flag per step)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return due
    flag = torch.tensor([int(due)], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def timed_checkpoints(every_s: float):
    """A `TrainerCallback` saving by training time (:class:`TimeSinceSave`)."""
    from transformers import TrainerCallback   # here, so importing the trainers' modules stays light

    class TimedCheckpoints(TimeSinceSave, TrainerCallback):
        pass

    return TimedCheckpoints(every_s)
