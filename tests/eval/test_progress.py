"""What eval shows while an arm runs: instances done, pass rate so far, model calls and an ETA."""

import io

from rich.console import Console

from runtime.agent import Episode, ModelCall, UserTurn
from runtime.eval.progress import ArmProgress


def _episode(*turns):
    """An episode with one user turn per ``(passed, model calls)``."""
    return Episode("e", turns=[UserTurn(i, "q", [ModelCall(1, "")] * calls, final_ok=True, passed=p)
                               for i, (p, calls) in enumerate(turns)])


def test_without_a_terminal_progress_comes_as_plain_lines_at_most_every_interval():
    out, now = io.StringIO(), [0.0]
    console = Console(file=out, width=200)                     # a file: not a terminal, as in CI
    with ArmProgress(console, "craft", 4, user_turns=5, max_turns=2, interval_s=30,
                     clock=lambda: now[0]) as progress:
        now[0] = 10.0
        progress.calls(2)                                      # 10 s after the start: too soon for a line
        now[0] = 30.0
        progress.calls(2)
        now[0] = 40.0
        progress.episode(_episode((True, 1)))
        now[0] = 55.0
        progress.calls(3)
        now[0] = 60.0
        progress.episode(_episode((False, 2), (True, 1)))
        now[0] = 70.0
        progress.calls(1)
        progress.episode(_episode((False, 1)))
        now[0] = 80.0
        progress.episode(_episode((True, 1)))
    assert out.getvalue().splitlines() == [
        # Nothing finished yet: up to max_turns (2) calls for each of the 5 user turns.
        "eval: arm craft: 0/4 instances, pass - of 0 user turns, 4 model calls, 0m30s elapsed, eta 0m45s",
        # 4/3 calls per finished turn leave fewer calls than instances to finish: at least one each.
        "eval: arm craft: 2/4 instances, pass 66.7% of 3 user turns, 7 model calls, 1m00s elapsed, eta 0m17s",
        "eval: arm craft done: 4/4 instances, pass 60.0% of 5 user turns, 8 model calls, 1m20s elapsed, eta 0m00s",
    ]


def test_on_a_terminal_progress_is_a_bar_that_leaves_the_summary_line():
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=True)
    with ArmProgress(console, "stuffed", 2) as progress:
        progress.calls(2)
        progress.episode(_episode((True, 1)))
        progress.episode(_episode((True, 1)))
    assert progress.bar is not None
    assert "eval: arm stuffed done: 2/2 instances, pass 100.0% of 2 user turns, 2 model calls" in out.getvalue()
