"""R_outcome: did the code run, and does its final result pass the instance's checks."""

from __future__ import annotations

__all__ = ["EXEC_SHARE", "outcome_reward"]

# Most of the outcome is the unit test (expectations vs the reference result, or the
# share of checks passed where no reference is visible); the
# rest rewards running at all, so a group whose members all fail the test still has
# a gradient towards code that executes.
EXEC_SHARE = 0.25


def outcome_reward(turn, passed: bool | float | None, step_rewards: bool = True) -> float:
    """Outcome of one user turn, in [0, 1].

    ``R = 0.25 * exec + 0.75 * passed`` where ``exec`` is, with step rewards, the
    share of the turn's tool executions that succeeded (each tool turn counts), and
    without them whether the turn ended on a successful execution. Without a visible
    reference ``passed`` is the share of the turn's checks the result passes.

    Args:
        turn: A ``runtime.agent.UserTurn``.
        passed: Whether the final result passed the expectations (None = not checked),
            or the share of checks passed (a float in [0, 1]).
        step_rewards: Reward every tool turn, not only the last.

    Example:
        >>> from runtime.agent import UserTurn, ModelCall, ExecRecord
        >>> t = UserTurn(0, "q", [ModelCall(5, "", exec=ExecRecord(False)), ModelCall(5, "", exec=ExecRecord(True))],
        ...              final_ok=True)
        >>> outcome_reward(t, passed=True)
        0.875
    """
    execs = [call.exec for call in turn.calls if call.exec is not None]
    if step_rewards:
        exec_score = sum(e.ok for e in execs) / len(execs) if execs else 0.0
    else:
        exec_score = float(bool(execs) and execs[-1].ok)
    tested = float(passed) if isinstance(passed, float) else float(bool(passed))
    return EXEC_SHARE * exec_score + (1 - EXEC_SHARE) * (tested if turn.final_ok else 0.0)
