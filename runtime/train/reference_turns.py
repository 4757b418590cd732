"""The reference solution of a turn written as the agent's reply, for GRPO's and verl's rows.

A reference-history row (`stage grpo { history reference }`, and every verl row) carries
the conversation's earlier turns as their references would have answered them. Under
`earlier_turns thinks` a later row keeps only an earlier turn's question, THINK and
answer (`runtime.agent.history`), so the THINK restates what a teacher's does: the
question and the params used so far.
"""

from __future__ import annotations

from craftc.ir import BlockFormat
from runtime.distill.blocks import format_turn
from runtime.distill.step import relevant_params

__all__ = ["reference_turn_texts"]


def reference_turn_texts(task, fmt: BlockFormat) -> list[str]:
    """Each turn of ``task`` (an ``AgentTask``) as the assistant message its reference would be.

    Its THINK restates the question and the params its reference code and the earlier
    ones use, as a teacher's does: under `earlier_turns thinks` that block is all a later
    turn keeps of it, so a placeholder there would hide the parameters a follow-up carries.
    """
    texts, used = [], {}
    for turn in task.turns:
        used.update(relevant_params(turn.reference_code, task.params))
        think = f"Question: {turn.ask}"
        if used:
            think += "\nParameters: " + ", ".join(f"{k} = {v}" for k, v in used.items()) + "."
        texts.append(format_turn(think, turn.reference_plan, turn.reference_code, fmt))
    return texts
