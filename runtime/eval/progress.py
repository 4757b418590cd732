"""Progress of one eval arm: instances done of total, pass rate so far, model calls, ETA.

On a terminal this is a rich progress bar (the pattern the distill step uses); where
the console is not a terminal (CI, a log file) a live bar prints nothing useful, so
the same figures come as plain lines, at most one every ``interval_s`` seconds, plus
one when the arm is done.

Episodes of an eval run advance in lockstep, so instances finish in waves and the
first wave takes most of the time: an ETA from instances done would say nothing for
minutes. The ETA counts model calls instead: the calls still to come are the user
turns not yet finished times the calls per user turn seen so far (``max_turns``, the
most a turn can take, until an episode has finished), at the time per call so far.
"""

from __future__ import annotations

import time

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from runtime.eval.metrics import turn_passed

__all__ = ["ArmProgress"]


def _clock_text(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


class ArmProgress:
    """Use as a context manager; call ``calls(n)`` after model calls and ``episode(e)`` per scored episode.

    Args:
        console: The step's rich console.
        arm: The arm's name, shown on every line.
        total: Instances the arm runs.
        user_turns: User turns over all those instances (default: one per instance).
        max_turns: Model calls allowed per user turn.
        interval_s: Least time between plain lines (no terminal).
        clock: Seconds, monotonic (tests pass a fake one).
    """

    def __init__(self, console, arm: str, total: int, user_turns: int | None = None, max_turns: int = 1,
                 interval_s: float = 30.0, clock=time.monotonic):
        self.console, self.arm, self.total = console, arm, total
        self.user_turns, self.max_turns = user_turns if user_turns is not None else total, max_turns
        self.interval_s, self.clock = interval_s, clock
        self.done = self.turns = self.passed = self.model_calls = self.finished_calls = 0
        self.started = self.last_line = 0.0
        self.bar: Progress | None = None
        self.task = None

    def __enter__(self) -> "ArmProgress":
        self.started = self.last_line = self.clock()
        if self.console.is_terminal:
            self.bar = Progress(TextColumn(f"eval {self.arm}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("instances, pass {task.fields[rate]}, {task.fields[calls]} calls"),
                                TimeElapsedColumn(), TextColumn("eta {task.fields[eta]}"),
                                console=self.console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.arm, total=self.total, rate="-", calls=0, eta="?")
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
        if exc[0] is None:
            self.console.print(f"eval: arm {self.arm} done: {self.line()}", highlight=False)

    @property
    def rate_text(self) -> str:
        return f"{100 * self.passed / self.turns:.1f}%" if self.turns else "-"

    def eta_s(self) -> float | None:
        """Seconds left, estimated from model calls (None before the first call)."""
        if not self.model_calls:
            return None
        per_turn = self.finished_calls / self.turns if self.turns else self.max_turns
        expected = self.finished_calls + per_turn * (self.user_turns - self.turns)
        # Every unfinished instance makes at least one more call.
        left = max(expected - self.model_calls, self.total - self.done)
        return left * (self.clock() - self.started) / self.model_calls

    @property
    def eta_text(self) -> str:
        eta = self.eta_s()
        return "?" if eta is None else _clock_text(eta)

    def line(self) -> str:
        """The figures so far in one line."""
        elapsed = self.clock() - self.started
        eta = self.eta_text
        return (f"{self.done}/{self.total} instances, pass {self.rate_text} of {self.turns} user turns, "
                f"{self.model_calls} model calls, {_clock_text(elapsed)} elapsed, eta {eta}")

    def calls(self, n: int) -> None:
        self.model_calls += n
        self._show()

    def episode(self, episode) -> None:
        """A finished, scored episode: one instance done, its user turns into the pass rate."""
        self.done += 1
        self.turns += len(episode.turns)
        self.finished_calls += sum(len(t.calls) for t in episode.turns)
        self.passed += sum(turn_passed(t) for t in episode.turns)
        self._show()

    def _show(self) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, rate=self.rate_text, calls=self.model_calls,
                            eta=self.eta_text)
            return
        now = self.clock()
        if now - self.last_line >= self.interval_s and self.done < self.total:
            self.last_line = now
            self.console.print(f"eval: arm {self.arm}: {self.line()}", highlight=False)
