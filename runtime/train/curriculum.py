"""The SFT warm-up a stage's `prefix_epochs` asks for (the plan's `stages/<stage>/curriculum.json`,
which also holds the stage's `question_dropout`: runtime.train.question_dropout).

Before the whole conversations, the trainer makes `prefix_epochs` passes over every
assistant turn cut after its reasoning block: the conversation up to that turn, then the
turn's `<THINK>` block alone, which restates the question and its parameters. These
examples are a few dozen trained tokens each, nearly all of them read off the question,
so a small model trained from scratch learns to read the question before it learns the
long code (docs/training.md, "Levers").

What comes before each reasoning block is the curriculum's `history`:
- `conversation`: one example per assistant turn, the whole conversation before it
  (code, tool output, failed attempts and answers included);
- `thinks`: one example per conversation, its questions each followed by the reasoning
  block of the reply that was trained. A later question's block still sees the earlier
  questions and what their blocks restated, which is what it reads its parameters from,
  at a fraction of the tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

from craftc.ir import SFTStage
from runtime.train.renames import renamed_examples

__all__ = ["CurriculumError", "HISTORIES", "cut_examples", "no_warm_up_reason", "read_curriculum",
           "prefix_conversations", "renamed_first_turns", "warm_up_examples", "warm_up_parts"]

CURRICULUM_FILE = "curriculum.json"
# The values `stage sft { prefix_history ... }` takes, as the IR declares them.
HISTORIES = get_args(SFTStage.model_fields["prefix_history"].annotation)
# What a curriculum.json without `renames` (written before the setting, or at 0) means.
NO_RENAMES = SFTStage.model_fields["prefix_renames"].default
NO_DROPOUT = SFTStage.model_fields["question_dropout"].default


class CurriculumError(ValueError):
    """The plan's curriculum.json is unreadable; the message names the file and the fix."""


def read_curriculum(plan_dir: str | Path, stage: str) -> dict | None:
    """`{"prefix_epochs", "cut_after", "history", "renames", "renames_cut_after",
    "question_dropout"}` from `stages/<stage>/curriculum.json`, or None."""
    path = Path(plan_dir) / "stages" / stage / CURRICULUM_FILE
    if not path.exists():
        return None
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        history = str(spec["history"])
        if history not in HISTORIES:
            raise ValueError(f"unknown history `{history}`")
        return {"prefix_epochs": float(spec["prefix_epochs"]), "cut_after": str(spec["cut_after"]), "history": history,
                "renames": int(spec.get("renames", NO_RENAMES)),
                "renames_cut_after": str(spec.get("renames_cut_after", spec["cut_after"])),
                "question_dropout": float(spec.get("question_dropout", NO_DROPOUT))}
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


def think_conversation(messages: list[dict], cut_after: str) -> list[list[dict]]:
    """The conversation's questions, each followed by the reasoning block of its trained reply.

    The code, tool output, failed attempts and answers are left out. A reply that repairs a
    failed attempt stays as context but is not trained: its block may speak of an error
    this example no longer holds. No example when no reply is left to train.

    Example:
        >>> convo = [{"role": "system", "content": "s"}, {"role": "user", "content": "q1"},
        ...          {"role": "assistant", "content": "<THINK>a</THINK><CODE>x</CODE>"},
        ...          {"role": "tool", "content": "out"},
        ...          {"role": "assistant", "content": "<ANSWER>1</ANSWER>"},
        ...          {"role": "user", "content": "q2"},
        ...          {"role": "assistant", "content": "<THINK>b</THINK><CODE>y</CODE>", "masked": True},
        ...          {"role": "tool", "content": "error"},
        ...          {"role": "assistant", "content": "<THINK>c</THINK><CODE>z</CODE>"}]
        >>> [(m["role"], m["content"], m["masked"]) for m in think_conversation(convo, "</THINK>")[0]]
        [('system', 's', False), ('user', 'q1', False), ('assistant', '<THINK>a</THINK>', False), ('user', 'q2', False), ('assistant', '<THINK>c</THINK>', True)]
    """
    out: list[dict] = []
    after_attempt = replied = False
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role in ("system", "user"):
            out.append({"role": role, "content": content, "masked": False})
            after_attempt = replied = False
        elif role == "assistant" and message.get("masked"):
            after_attempt = True
        elif role == "assistant" and not replied and cut_after in content:
            cut = content[: content.index(cut_after) + len(cut_after)]
            out.append({"role": "assistant", "content": cut, "masked": after_attempt})
            replied = True
    trained = any(m["role"] == "assistant" and not m["masked"] for m in out)
    return [out] if trained else []


def warm_up_examples(row: dict, curriculum: dict) -> list[list[dict]]:
    """The warm-up examples of one dataset row under `curriculum` (`read_curriculum`'s dict):
    its cuts, then its renamed first turns (`warm_up_parts`)."""
    cuts, renamed = warm_up_parts(row, curriculum)
    return cuts + renamed


def warm_up_parts(row: dict, curriculum: dict) -> tuple[list[list[dict]], list[list[dict]]]:
    """The row's cuts (`cut_examples`) and its renamed first turns (`renamed_first_turns`);
    a row that gives no cut gives no renamed turn either."""
    cuts = cut_examples(row, curriculum)
    return cuts, renamed_first_turns(row, curriculum) if cuts else []


def cut_examples(row: dict, curriculum: dict) -> list[list[dict]]:
    """The row's turns cut after their reasoning block, with the curriculum's `history` before them."""
    if curriculum["history"] == "thinks":
        return think_conversation(row["messages"], curriculum["cut_after"])
    return prefix_messages(row["messages"], curriculum["cut_after"])


def renamed_first_turns(row: dict, curriculum: dict) -> list[list[dict]]:
    """`renames` copies of the row's first turn with its names made up (runtime.train.renames),
    cut after its reasoning block, or after its last code block (`renames_cut_after`).

    None when the curriculum asks for none, or when the first question names none of the
    row's names. They need the dataset's `names` column.
    """
    if not curriculum.get("renames"):
        return []
    if "names" not in row:
        raise CurriculumError("the curriculum asks for renamed warm-up examples (`prefix_renames`), but the "
                              "dataset has no `names` column; rerun the dataset step (`craftc run PLAN "
                              "--only dataset`) with this version of craft")
    cut_after = curriculum.get("renames_cut_after", curriculum["cut_after"])
    if cut_after == curriculum["cut_after"]:
        first_turn = prefix_messages(row["messages"], cut_after)[:1]
    else:
        # Through the code: the first question's last cut, its final code after any discovery
        # call; no tool output follows it (it would not match the made-up names).
        first_turn = [cut for cut in prefix_messages(row["messages"], cut_after)
                      if sum(m["role"] == "user" for m in cut) == 1][-1:]
    seed = f"{row.get('instance_id', '')}:{row.get('variant', 0)}"
    return [renamed for turn in first_turn
            for renamed in renamed_examples(turn, list(row["names"]), curriculum["renames"], seed)]


def no_warm_up_reason(curriculum: dict) -> str:
    """Why a conversation gives no warm-up example under `curriculum`, for warnings and errors.

    Example:
        >>> no_warm_up_reason({"history": "thinks", "cut_after": "</THINK>"})
        'no trained reply holds `</THINK>` outside a repair of a failed attempt'
    """
    if curriculum["history"] == "thinks":
        return f"no trained reply holds `{curriculum['cut_after']}` outside a repair of a failed attempt"
    return f"no trained reply holds `{curriculum['cut_after']}`"


def prefix_conversations(dataset, curriculum: dict):
    """The warm-up dataset: `warm_up_examples` of every conversation, in the dataset's order."""
    from datasets import Dataset

    rows = [{"messages": cut} for row in dataset for cut in warm_up_examples(row, curriculum)]
    return Dataset.from_list(rows)
