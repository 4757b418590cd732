"""A trained agent reads at eval the very tool message it learned to read.

The tool message's body is written in one place (``runtime.agent.episode.tool_output_text``).
The training conversations (from the gate's JSON summary of an execution), the teacher's
repair requests (from the sandbox result) and the agent loop of eval and GRPO (from the
sandbox result) must all render the same execution to the same text.
"""

import pandas as pd

from runtime.agent import ExecRecord, answer_text, tool_output_text
from runtime.distill.datasets import tool_output
from runtime.distill.feedback import error_output
from runtime.distill.gates import _execution_summary
from runtime.sandbox.result import ExecResult, render_preview

FRAME = pd.DataFrame({"campaign": ["Winter Fly", "Summer Trip"], "clicks": [40, 12]})
OK = ExecResult(ok=True, result_frame=FRAME, result_rows=2, result_columns=("campaign", "clicks"),
                result_preview=render_preview(FRAME, 2))
FAILED = ExecResult(ok=False, error_class="RuntimeError", error_type="BinderError",
                    error_message="Referenced column \"nme\" not found\nLINE 1: SELECT nme FROM campaign")


def test_a_result_reads_the_same_in_training_data_and_in_the_agent_loop():
    in_training = tool_output(_execution_summary(OK))
    in_the_loop = tool_output_text(ExecRecord.from_result(OK))
    assert in_training == in_the_loop
    assert in_the_loop.splitlines()[-1] == "[2 rows x 2 columns]"


def test_an_error_reads_the_same_to_the_teacher_in_training_data_and_in_the_agent_loop():
    to_the_teacher = error_output(FAILED)
    in_training = tool_output(_execution_summary(FAILED))
    in_the_loop = tool_output_text(ExecRecord.from_result(FAILED))
    assert to_the_teacher == in_training == in_the_loop == 'BinderError: Referenced column "nme" not found'


def test_the_answer_that_closes_a_turn_is_written_from_the_result_alone():
    summary = answer_text(ExecRecord.from_summary(_execution_summary(OK)))
    assert summary == answer_text(ExecRecord.from_result(OK))
    assert summary == "The result has 2 rows with campaign, clicks. First row: Winter Fly 40."
