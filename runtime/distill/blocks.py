"""The three-block assistant turn: `<THINK>`, `<PLAN>`, `<CODE>`, or a final `<ANSWER>`.

Teachers write turns as text; gates and datasets need the blocks. `parse_turn` never
raises: a turn with a missing, unclosed or empty block comes back with
``complete=False`` and a list of human-readable problems, which the output gate
turns into an ``incomplete`` rejection.

Example:
    >>> from craftc.ir import BlockFormat
    >>> text = format_turn("why", "Count campaigns.", "result = 1", BlockFormat())
    >>> turn = parse_turn(text, BlockFormat())
    >>> (turn.plan, turn.code, turn.complete)
    ('Count campaigns.', 'result = 1', True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from craftc.ir import BlockFormat

__all__ = ["ParsedTurn", "parse_turn", "format_turn", "format_code", "format_answer"]

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?\s*```\s*$", re.S)


@dataclass(frozen=True)
class ParsedTurn:
    """One assistant turn split into its blocks; absent blocks are ``None``."""

    think: str | None
    plan: str | None
    code: str | None
    answer: str | None
    complete: bool
    problems: tuple[str, ...] = ()
    code_closed: bool = False


def _block(text: str, tag: str) -> tuple[str | None, str | None]:
    """The body of `<tag>...</tag>` and a problem, if any; unclosed bodies run to the end."""
    opening, closing = f"<{tag}>", f"</{tag}>"
    start = text.find(opening)
    if start < 0:
        return None, f"missing <{tag}> block"
    body_start = start + len(opening)
    end = text.find(closing, body_start)
    if end < 0:
        return text[body_start:].strip("\n"), f"unclosed <{tag}> block (the text is truncated)"
    if text.find(opening, end) >= 0:
        return text[body_start:end].strip("\n"), f"more than one <{tag}> block"
    return text[body_start:end].strip("\n"), None


def _strip_fence(code: str) -> str:
    # Chat models like to wrap code in Markdown fences even inside a tag.
    match = _FENCE.match(code)
    return match.group("body") if match else code


def parse_turn(text: str, fmt: BlockFormat = BlockFormat()) -> ParsedTurn:
    """Split an assistant turn into blocks and list what is wrong with it.

    A turn is complete when it has closed, non-empty THINK, PLAN and CODE blocks, or
    when it is a closed, non-empty final ANSWER.
    """
    answer, answer_problem = _block(text, fmt.answer)
    has_work = any(f"<{tag}>" in text for tag in (fmt.think, fmt.plan, fmt.code))
    if answer is not None and not has_work:
        problems = [answer_problem] if answer_problem else []
        if not answer.strip():
            problems.append(f"empty <{fmt.answer}> block")
        return ParsedTurn(None, None, None, answer.strip(), not problems, tuple(problems))
    parts, problems = {}, []
    for key, tag in (("think", fmt.think), ("plan", fmt.plan), ("code", fmt.code)):
        body, problem = _block(text, tag)
        if problem:
            problems.append(problem)
        elif not body.strip():
            problems.append(f"empty <{tag}> block")
        parts[key] = body
    code_closed = parts["code"] is not None and f"</{fmt.code}>" in text
    if parts["code"] is not None:
        parts["code"] = _strip_fence(parts["code"]).strip("\n")
    return ParsedTurn(
        think=parts["think"].strip() if parts["think"] is not None else None,
        plan=parts["plan"].strip() if parts["plan"] is not None else None,
        code=parts["code"],
        answer=answer.strip() if answer is not None else None,
        complete=not problems,
        problems=tuple(problems),
        code_closed=code_closed,
    )


def format_turn(think: str, plan: str, code: str, fmt: BlockFormat = BlockFormat()) -> str:
    """The canonical text of one working turn (the inverse of `parse_turn`)."""
    return (
        f"<{fmt.think}>\n{think.strip()}\n</{fmt.think}>\n"
        f"<{fmt.plan}>\n{plan.strip()}\n</{fmt.plan}>\n"
        + format_code(code, fmt)
    )


def format_code(code: str, fmt: BlockFormat = BlockFormat()) -> str:
    """The canonical text of a `<CODE>` block alone (how a compacted earlier turn keeps its code)."""
    return f"<{fmt.code}>\n{code.strip()}\n</{fmt.code}>"


def format_think(think: str, fmt: BlockFormat = BlockFormat()) -> str:
    """The canonical text of a `<THINK>` block alone (how `earlier_turns thinks` keeps a turn)."""
    return f"<{fmt.think}>\n{think.strip()}\n</{fmt.think}>"


def format_answer(answer: str, fmt: BlockFormat = BlockFormat()) -> str:
    """The canonical text of a final-answer turn."""
    return f"<{fmt.answer}>\n{answer.strip()}\n</{fmt.answer}>"
