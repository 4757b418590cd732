"""Does ``max_new_tokens`` hold the answers a model was trained to write?

A model call stops at ``max_new_tokens`` (the grpo stage's, which eval decodes with too).
An answer cut there never closes its ``<CODE>`` block, so its code does not run: a turn
whose every trained answer is longer cannot pass, however well the model learned it. The
limit is a count of the model's own tokens, and a real tokenizer can need far more than
tiny_moe's for the same text (SmolLM2's spends a token on each run of indentation), so
the same recipe can fit under one model and not under another. Both the eval step
(against the answers SFT trained on) and the grpo step (against its rows' reference
turns) measure the room before they decode, and say on the console when it is short.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["answer_room", "room_warning", "trained_answer_lengths"]


def trained_answer_lengths(dataset_dir: str | Path, tokenizer) -> list[int]:
    """Token counts of every assistant message in a trajectory dataset (``datasets`` on
    disk), each with the end-of-turn token a generation must also write."""
    from datasets import load_from_disk

    texts = [m["content"] for messages in load_from_disk(str(dataset_dir))["messages"]
             for m in messages if m["role"] == "assistant"]
    if not texts:
        return []
    return [len(ids) + 1 for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def answer_room(lengths: list[int], limit: int) -> dict:
    """How answers of these lengths fit in ``limit`` new tokens.

    >>> answer_room([100, 300, 500, 520], 384)
    {'max_new_tokens': 384, 'answers': 4, 'longer': 2, 'longest': 520, 'median': 500}
    """
    ordered = sorted(lengths)
    return {"max_new_tokens": limit, "answers": len(ordered), "longer": sum(n > limit for n in ordered),
            "longest": ordered[-1] if ordered else 0, "median": ordered[len(ordered) // 2] if ordered else 0}


def room_warning(room: dict, what: str) -> str | None:
    """The console warning when some answers do not fit; None when all do.

    >>> room_warning(answer_room([100, 300, 500, 520], 384), "answers SFT trained on")
    "2 of the 4 answers SFT trained on (50%) are longer than max_new_tokens 384 in this model's tokens (the longest 520): a call that writes one stops mid-answer, and code cut there does not run; raise `max_new_tokens` in the grpo stage (eval decodes with it too) to at least 520"
    >>> room_warning(answer_room([100, 300], 384), "answers SFT trained on") is None
    True
    """
    if not room["longer"]:
        return None
    return (f"{room['longer']:,} of the {room['answers']:,} {what} ({100 * room['longer'] / room['answers']:.0f}%) "
            f"are longer than max_new_tokens {room['max_new_tokens']} in this model's tokens (the longest "
            f"{room['longest']}): a call that writes one stops mid-answer, and code cut there does not run; raise "
            f"`max_new_tokens` in the grpo stage (eval decodes with it too) to at least {room['longest']}")
