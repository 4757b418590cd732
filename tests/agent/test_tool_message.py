"""A trained agent reads at eval the very tool message it learned to read.

The tool message's body is written in one place (``runtime.agent.episode.tool_output_text``).
The training conversations (built by the dataset step from the gate's JSON summary of an
execution), the teacher's repair requests (from the sandbox result) and the agent loop of
eval and GRPO (from the sandbox result) must all render the same execution to the same text.
"""

import pandas as pd

from craftc.ir import BlockFormat
from runtime.agent import ExecRecord, answer_text, tool_output_text
from runtime.distill.blocks import format_answer, format_turn
from runtime.distill.datasets import build_examples
from runtime.distill.feedback import error_output
from runtime.distill.gates import _execution_summary
from runtime.sandbox.result import ExecResult, render_preview

FRAME = pd.DataFrame({"campaign": ["Winter Fly", "Summer Trip"], "clicks": [40, 12]})
OK = ExecResult(ok=True, result_frame=FRAME, result_rows=2, result_columns=("campaign", "clicks"),
                result_preview=render_preview(FRAME, 2))
FAILED = ExecResult(ok=False, error_class="RuntimeError", error_type="BinderError",
                    error_message="Referenced column \"nme\" not found\nLINE 1: SELECT nme FROM campaign")


def _training_conversation(execution: dict) -> list[dict]:
    """The dataset step's conversation for one accepted turn with this execution summary."""
    instance = {"instance_id": "i-0", "workflow": "w", "split": "train", "turns": [{"ask": "Top campaigns?"}]}
    accepted = {("i-0", 0): [{"text": format_turn("t", "p", "result = 1", BlockFormat()), "execution": execution}]}
    out = build_examples([instance], accepted, {"stripped": "s", "stuffed": "s"},
                         {"user": "{ask}", "tool": "{output}"}, BlockFormat())
    return out["stripped"][0]["messages"]


def test_a_result_reads_the_same_in_training_data_and_in_the_agent_loop():
    messages = _training_conversation(_execution_summary(OK))
    in_the_loop = tool_output_text(ExecRecord.from_result(OK))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[3]["content"] == in_the_loop
    assert in_the_loop.splitlines()[-1] == "[2 rows x 2 columns]"
    # The turn closes with the answer the loop would ask for, written from the same result.
    assert messages[4]["content"] == format_answer(answer_text(ExecRecord.from_result(OK)), BlockFormat())


def test_an_error_reads_the_same_to_the_teacher_and_in_the_agent_loop():
    # The teacher's text is also what a training conversation keeps after a masked failed attempt.
    to_the_teacher = error_output(FAILED)
    in_the_loop = tool_output_text(ExecRecord.from_result(FAILED))
    assert to_the_teacher == in_the_loop == 'BinderError: Referenced column "nme" not found'


def test_the_answer_that_closes_a_turn_is_written_from_the_result_alone():
    summary = answer_text(ExecRecord.from_summary(_execution_summary(OK)))
    assert summary == answer_text(ExecRecord.from_result(OK))
    assert summary == "The result has 2 rows with campaign, clicks. First row: Winter Fly 40."


def test_an_endless_loop_reads_the_same_whichever_time_limit_stopped_it():
    # Under load the wall clock can fire before the CPU limit, and the CPU seconds used
    # vary: the agent (and so the training data of a seed) must not see the difference.
    # The results are built as the sandbox pool builds them from its worker's reply: a
    # limit it enforced is the result's `error_class`, with no exception `error_type`.
    from runtime.sandbox.limits import SandboxLimits
    from runtime.sandbox.pool import build_result

    limits = SandboxLimits(wall_timeout_s=1.0, cpu_s=1)
    wall = build_result({"failure": "Timeout", "cpu_s": 0.7}, b"", limits, 0)
    cpu_first = build_result({"failure": "Timeout", "cpu_s": 1.0}, b"", limits, 0)
    cpu = build_result({"failure": "CpuLimit", "cpu_s": 1.0}, b"", limits, 0)
    assert (wall.error_class, cpu_first.error_class, cpu.error_class) == ("Timeout", "CpuLimit", "CpuLimit")
    assert wall.error_message != cpu_first.error_message != cpu.error_message  # the record keeps what happened
    texts = {error_output(r) for r in (wall, cpu_first, cpu)} | {tool_output_text(ExecRecord.from_result(r))
                                                                 for r in (wall, cpu_first, cpu)}
    assert texts == {"Timeout: the code ran past its time limit and was stopped"}
    # The dataset step renders a kept failed attempt from the same text.
    assert tool_output_text(ExecRecord.from_summary(_execution_summary(cpu))) == texts.pop()
