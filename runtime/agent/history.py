"""What the agent keeps of a conversation's earlier turns (the recipe's `earlier_turns`).

Under `full` the context is the whole transcript. Under `compact` an earlier turn is
kept as its question, the last `<CODE>` it wrote and its `<ANSWER>`: the scratchpad,
the plan, failed attempts and tool output are dropped once the next question is asked.
That is how a long analyst conversation stays short: the code is what a follow-up
question edits, the answer is what it refers to. The turn being worked on is always
whole, so a repair still sees its failed attempt and the error.

The one home of the rule. The dataset step (one training example per turn, earlier
turns compacted and masked), GRPO's rows, verl's rows and the agent loop at eval all
call it, so the agent is trained on the context it meets.

Example:
    >>> from craftc.ir import BlockFormat
    >>> turn = [{"role": "user", "content": "q1"},
    ...         {"role": "assistant", "content": "<THINK>\\nt\\n</THINK>\\n<PLAN>\\np\\n</PLAN>\\n<CODE>\\nbad\\n</CODE>"},
    ...         {"role": "tool", "content": "NameError: bad"},
    ...         {"role": "assistant", "content": "<THINK>\\nt\\n</THINK>\\n<PLAN>\\np\\n</PLAN>\\n<CODE>\\nresult = 1\\n</CODE>"},
    ...         {"role": "tool", "content": "1"},
    ...         {"role": "assistant", "content": "<ANSWER>\\n1\\n</ANSWER>"}]
    >>> [m["content"] for m in compact_turn(turn, BlockFormat())]
    ['q1', '<CODE>\\nresult = 1\\n</CODE>', '<ANSWER>\\n1\\n</ANSWER>']
"""

from __future__ import annotations

from typing import get_args

from craftc.ir import BlockFormat, Recipe
from runtime.distill.blocks import format_code, parse_turn

__all__ = ["EARLIER_TURNS", "DEFAULT_EARLIER_TURNS", "as_earlier_turn", "compact_turn", "compact_before_last_question", "earlier_turns_of"]

# The values the recipe's `earlier_turns` takes, and its default, as the IR declares them.
EARLIER_TURNS = get_args(Recipe.model_fields["earlier_turns"].annotation)
DEFAULT_EARLIER_TURNS = Recipe.model_fields["earlier_turns"].default


def earlier_turns_of(builder: dict) -> str:
    """The rule `specs/input_builder.json` names (absent: the IR's default, which the compiler leaves out)."""
    value = builder.get("earlier_turns", DEFAULT_EARLIER_TURNS)
    if value not in EARLIER_TURNS:
        raise ValueError(f"specs/input_builder.json: unknown earlier_turns `{value}`; recompile the recipe "
                         "with `craftc compile`")
    return value


def compact_turn(messages: list[dict], fmt: BlockFormat) -> list[dict]:
    """A finished user turn as later turns see it: the question, its last CODE, its ANSWER.

    ``messages`` starts with the turn's user message. A turn that wrote no code keeps its
    question (and its answer, if it gave one). Extra keys of the kept messages (``masked``)
    are dropped: the caller decides what trains.
    """
    kept = [{"role": "user", "content": messages[0]["content"]}]
    code, answer = None, None
    for message in messages[1:]:
        if message["role"] != "assistant":
            continue
        parsed = parse_turn(message.get("content") or "", fmt)
        if parsed.code is not None:
            code = parsed.code
        elif parsed.answer is not None:
            answer = message["content"]
    if code is not None:
        kept.append({"role": "assistant", "content": format_code(code, fmt)})
    if answer is not None:
        kept.append({"role": "assistant", "content": answer})
    return kept


def as_earlier_turn(messages: list[dict], rule: str, fmt: BlockFormat) -> list[dict]:
    """A finished turn as later turns see it under ``rule``: whole, or compacted."""
    return compact_turn(messages, fmt) if rule == "compact" else messages


def compact_before_last_question(messages: list[dict], fmt: BlockFormat) -> list[dict]:
    """``messages`` with the turn before its last user message compacted.

    Called as each new question is asked, so every earlier turn is compacted once. The
    messages before that turn (the system prompt, turns compacted already) stay as they are.
    """
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if len(users) < 2:
        return messages
    start, end = users[-2], users[-1]
    return messages[:start] + compact_turn(messages[start:end], fmt) + messages[end:]
