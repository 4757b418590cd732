"""Eval hygiene: what agent code may see, and which turns are scored."""

import pandas as pd

from runtime.agent import AgentTask
from runtime.agent.task import TaskTurn
from runtime.eval.step import EMPTY_REFERENCE, FAILED_REFERENCE, exclusions


def test_agent_code_sees_only_the_params_asked_so_far():
    task = AgentTask("i", "w", {"channel": "video", "tier": "Tier 1", "weeks": 4},
                     (TaskTurn("Daily video clicks, 4 weeks", asked=("channel", "weeks")),
                      TaskTurn("Only Tier 1 markets", asked=("channel", "tier", "weeks"))))
    assert task.params_asked(0) == {"channel": "video", "weeks": 4}       # no `tier` before it is asked
    assert task.params_asked(1) == task.params
    old = AgentTask("i", "w", {"a": 1}, (TaskTurn("q"),))                  # an instance file without `asked`
    assert old.params_asked(0) == {"a": 1}


def test_a_turn_whose_reference_returns_no_rows_or_fails_is_not_scored():
    tasks = [AgentTask("i", "w", {}, (TaskTurn("q1"), TaskTurn("q2"), TaskTurn("q3")))]
    references = {"i": [pd.DataFrame({"x": [1]}), pd.DataFrame({"x": []}), None]}
    assert exclusions(tasks, references) == {("i", 1): EMPTY_REFERENCE, ("i", 2): FAILED_REFERENCE}


def test_the_agent_loop_runs_code_with_the_asked_params_only():
    from runtime.agent import Generation, run_episodes

    seen = []

    class Sandbox:
        def run(self, code, params):
            from runtime.sandbox.result import ExecResult

            seen.append(dict(params))
            return ExecResult(ok=False, error_class="RuntimeError", error_type="ValueError", error_message="stop")

    task = AgentTask("i", "w", {"channel": "video", "tier": "Tier 1"},
                     (TaskTurn("Daily video clicks", asked=("channel",)),
                      TaskTurn("Only Tier 1", asked=("channel", "tier"))))
    reply = "<THINK>t</THINK><PLAN>p</PLAN><CODE>result = 1</CODE>"
    run_episodes(lambda convs: [Generation(reply, 10) for _ in convs], [task], "system", Sandbox(), max_turns=1)
    assert seen == [{"channel": "video"}, {"channel": "video", "tier": "Tier 1"}]
