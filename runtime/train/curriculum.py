"""The SFT warm-up a stage's `prefix_epochs` asks for (the plan's `stages/<stage>/curriculum.json`).

Before the whole conversations, the trainer makes `prefix_epochs` passes over every
assistant turn cut after its reasoning block: the conversation up to that turn, then the
turn's `<THINK>` block alone, which restates the question and its parameters. These
examples are a few dozen trained tokens each, nearly all of them read off the question,
so a small model trained from scratch learns to read the question before it learns the
long code (docs/training.md, "Levers").
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["CurriculumError", "read_curriculum", "prefix_conversations"]

CURRICULUM_FILE = "curriculum.json"


class CurriculumError(ValueError):
    """The plan's curriculum.json is unreadable; the message names the file and the fix."""


def read_curriculum(plan_dir: str | Path, stage: str) -> dict | None:
    """`{"prefix_epochs", "cut_after"}` from `stages/<stage>/curriculum.json`, or None without one."""
    path = Path(plan_dir) / "stages" / stage / CURRICULUM_FILE
    if not path.exists():
        return None
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        return {"prefix_epochs": float(spec["prefix_epochs"]), "cut_after": str(spec["cut_after"])}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CurriculumError(f"`{path}` is not a curriculum craftc wrote ({exc}); recompile the recipe "
                              "with `craftc compile`") from None


def prefix_messages(messages: list[dict], cut_after: str) -> list[list[dict]]:
    """One example per assistant turn that holds `cut_after`: the turns before it, then it cut there.

    Example:
        >>> convo = [{"role": "user", "content": "q"},
        ...          {"role": "assistant", "content": "<THINK>a</THINK><CODE>x</CODE>"},
        ...          {"role": "tool", "content": "out"},
        ...          {"role": "assistant", "content": "<ANSWER>1</ANSWER>"}]
        >>> [m[-1]["content"] for m in prefix_messages(convo, "</THINK>")]
        ['<THINK>a</THINK>']
    """
    out = []
    for i, message in enumerate(messages):
        content = message.get("content") or ""
        if message["role"] == "assistant" and not message.get("masked") and cut_after in content:
            cut = content[: content.index(cut_after) + len(cut_after)]
            out.append([dict(m) for m in messages[:i]] + [{**message, "content": cut}])
    return out


def prefix_conversations(dataset, cut_after: str):
    """The warm-up dataset: `prefix_messages` of every conversation, in the dataset's order."""
    from datasets import Dataset

    rows = [{"messages": cut} for messages in dataset["messages"] for cut in prefix_messages(messages, cut_after)]
    return Dataset.from_list(rows)
