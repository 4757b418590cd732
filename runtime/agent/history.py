"""What the agent keeps of a conversation's earlier turns (the recipe's `earlier_turns`).

Under `full` the context is the whole transcript. The other rules keep an earlier turn
as its question, some blocks of its last attempt and its `<ANSWER>`, and drop the rest
(failed attempts and tool output always) once the next question is asked:

- `compact` keeps the last `<CODE>`: the code is what a follow-up question edits;
- `thinks` keeps the last `<THINK>`: it restates the question with every parameter so
  far, which is what a follow-up carries over; its code is written afresh.

That is how a long analyst conversation stays short. The turn being worked on is always
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
    >>> [m["content"] for m in compact_turn(turn, BlockFormat(), rule="thinks")]
    ['q1', '<THINK>\\nt\\n</THINK>', '<ANSWER>\\n1\\n</ANSWER>']
"""

from __future__ import annotations

from typing import get_args

from craftc.ir import BlockFormat, Recipe
from runtime.distill.blocks import format_code, format_think, parse_turn

__all__ = ["EARLIER_TURNS", "DEFAULT_EARLIER_TURNS", "as_earlier_turn", "compact_turn", "compact_before_last_question", "earlier_turns_of",
           "what_is_kept"]

# The values the recipe's `earlier_turns` takes, and its default, as the IR declares them.
EARLIER_TURNS = get_args(Recipe.model_fields["earlier_turns"].annotation)
DEFAULT_EARLIER_TURNS = Recipe.model_fields["earlier_turns"].default
# The block of its last attempt that each shortening rule keeps of an earlier turn.
KEPT_BLOCK = {"compact": "code", "thinks": "think"}


def earlier_turns_of(builder: dict) -> str:
    """The rule `specs/input_builder.json` names (absent: the IR's default, which the compiler leaves out)."""
    value = builder.get("earlier_turns", DEFAULT_EARLIER_TURNS)
    if value not in EARLIER_TURNS:
        raise ValueError(f"specs/input_builder.json: unknown earlier_turns `{value}`; recompile the recipe "
                         "with `craftc compile`")
    return value


def compact_turn(messages: list[dict], fmt: BlockFormat, rule: str = "compact") -> list[dict]:
    """A finished user turn as later turns see it under a shortening ``rule``.

    The question, the block ``KEPT_BLOCK[rule]`` of the last attempt that wrote code, and
    the ANSWER. ``messages`` starts with the turn's user message. A turn that wrote no
    code keeps its question (and its answer, if it gave one). Extra keys of the kept
    messages (``masked``) are dropped: the caller decides what trains.
    """
    kept = [{"role": "user", "content": messages[0]["content"]}]
    last, answer = None, None
    for message in messages[1:]:
        if message["role"] != "assistant":
            continue
        parsed = parse_turn(message.get("content") or "", fmt)
        if parsed.code is not None:
            last = parsed
        elif parsed.answer is not None:
            answer = message["content"]
    block = KEPT_BLOCK[rule]
    if last is not None and block == "code":
        kept.append({"role": "assistant", "content": format_code(last.code, fmt)})
    elif last is not None and last.think:
        kept.append({"role": "assistant", "content": format_think(last.think, fmt)})
    if answer is not None:
        kept.append({"role": "assistant", "content": answer})
    return kept


def what_is_kept(rule: str) -> str:
    """What a shortening ``rule`` keeps of an earlier turn, in words (for reports and model cards)."""
    return f"its question, the last `<{KEPT_BLOCK[rule].upper()}>` block it wrote and its `<ANSWER>`"


def as_earlier_turn(messages: list[dict], rule: str, fmt: BlockFormat) -> list[dict]:
    """A finished turn as later turns see it under ``rule``: whole, or shortened."""
    return messages if rule == "full" else compact_turn(messages, fmt, rule)


def compact_before_last_question(messages: list[dict], fmt: BlockFormat, rule: str = "compact") -> list[dict]:
    """``messages`` with the turn before its last user message shortened under ``rule``.

    Called as each new question is asked, so every earlier turn is shortened once. The
    messages before that turn (the system prompt, turns shortened already) stay as they are.
    """
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if len(users) < 2:
        return messages
    start, end = users[-2], users[-1]
    return messages[:start] + compact_turn(messages[start:end], fmt, rule) + messages[end:]
