"""What eval shows while an arm runs: instances done, pass rate so far, model calls and an ETA."""

import io

from rich.console import Console

from runtime.agent import Episode, UserTurn
from runtime.eval.progress import ArmProgress


def _episode(*passed):
    return Episode("e", turns=[UserTurn(i, "q", final_ok=True, passed=p) for i, p in enumerate(passed)])


def test_without_a_terminal_progress_comes_as_plain_lines_at_most_every_interval():
    out, now = io.StringIO(), [0.0]
    console = Console(file=out, width=200)                     # a file: not a terminal, as in CI
    with ArmProgress(console, "craft", 4, interval_s=30, clock=lambda: now[0]) as progress:
        progress.calls(8)
        now[0] = 10.0
        progress.episode(_episode(True))                       # 10 s after the start: too soon for a line
        now[0] = 40.0
        progress.episode(_episode(False, True))
        now[0] = 50.0
        progress.episode(_episode(False))                      # 10 s after the last line
        now[0] = 80.0
        progress.episode(_episode(True))
    assert out.getvalue().splitlines() == [
        "eval: arm craft: 2/4 instances, pass 66.7% of 3 user turns, 8 model calls, 0m40s elapsed, eta 0m40s",
        "eval: arm craft done: 4/4 instances, pass 60.0% of 5 user turns, 8 model calls, 1m20s elapsed, eta 0m00s",
    ]


def test_on_a_terminal_progress_is_a_bar_that_leaves_the_summary_line():
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=True)
    with ArmProgress(console, "stuffed", 2) as progress:
        progress.calls(2)
        progress.episode(_episode(True))
        progress.episode(_episode(True))
    assert progress.bar is not None
    assert "eval: arm stuffed done: 2/2 instances, pass 100.0% of 2 user turns, 2 model calls" in out.getvalue()
