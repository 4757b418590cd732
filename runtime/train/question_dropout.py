"""Training questions with some of their words left out (`stage sft { question_dropout 20% }`).

A small model trained from scratch on two or three phrasings per workflow learns each
phrasing as a whole: asked in words it never saw, it writes the trajectory of the training
question it recalls best. Rewriting the training questions, in every pass anew, with some
words left out and a few neighbours swapped, shows it the same question in many shapes, so
that what decides the trajectory is the words that carry the question (the metric, the
entity, the parameter values), not the sentence around them.

In each pass a third of the questions stay as they are written (`KEEP`); in the others every
word that is not a parameter value (a name of the row's `names` column, or a word with a
digit) is dropped with the stage's rate, and each word may swap with a neighbour
(`SHUFFLE`). The same rewrite replaces the question where an assistant reply restates it
(the reasoning block's first line), so the restatement is still a copy of the question.
Draws are seeded per conversation, question and pass: the same dataset gives the same
examples.
"""

from __future__ import annotations

import math
import random
import re

__all__ = ["KEEP", "SHUFFLE", "drop_words", "rewritten_row", "rewritten_passes"]

KEEP = 0.34        # share of the questions left as written in each pass
SHUFFLE = 2.0      # a word's place moves by a uniform draw in [0, SHUFFLE): mostly one place at most


def drop_words(question: str, names: list[str], rate: float, rng: random.Random) -> str:
    """`question` with words other than `names` and numbers dropped at `rate` and a few
    neighbours swapped, or as it is (a share `KEEP` of the draws).

    Example:
        >>> q = "Which 5 campaigns of Maple Home had the best CTR in the last 30 days?"
        >>> drop_words(q, ["Maple Home"], 0.3, random.Random(0))
        'Which 5 campaigns Maple Home had the best in CTR the last 30 days?'
        >>> drop_words(q, ["Maple Home"], 0.0, random.Random(3)) == q
        True
    """
    if rate <= 0 or rng.random() < KEEP:
        return question
    names = [name for name in names if name]
    # A name of several words is one unit: never split, dropped or moved apart.
    units = re.findall("|".join([re.escape(n) for n in sorted(names, key=len, reverse=True)] + [r"\S+"]), question)
    kept = [u for u in units if u in names or any(c.isdigit() for c in u) or rng.random() >= rate]
    if not kept:
        return question
    keys = [i + rng.uniform(0, SHUFFLE) for i in range(len(kept))]
    out = ""
    for _, unit in sorted(zip(keys, kept), key=lambda pair: pair[0]):
        out += unit if not out or re.fullmatch(r"[^\w]+", unit) else " " + unit
    return out


def rewritten_row(row: dict, rate: float, tag: str) -> dict:
    """A dataset row with each user question rewritten (`drop_words`) and each restatement
    of it in a later assistant reply rewritten the same way; `tag` names the pass."""
    names = list(row.get("names") or [])
    messages = [dict(m) for m in row["messages"]]
    seed = f"{row.get('instance_id', '')}:{row.get('variant', 0)}:{tag}"
    for i, message in enumerate(messages):
        question = message.get("content") or ""
        if message["role"] != "user" or not question:
            continue
        new = drop_words(question, names, rate, random.Random(f"{seed}:{i}"))
        if new == question:
            continue
        message["content"] = new
        for later in messages[i + 1:]:
            if later["role"] == "assistant" and question in (later.get("content") or ""):
                later["content"] = later["content"].replace(question, new)
    return {**row, "messages": messages}


def rewritten_passes(dataset, rate: float, epochs: float, phase: str):
    """The `epochs` passes of a training phase over `dataset`, each rewritten with its own
    draws, as one dataset, and the epochs to train over it: `ceil(epochs)` copies, so 3
    passes are 3 copies trained once and 0.5 of a pass is half of one copy.

    The phase's name (`warm` or `main`) keeps the draws of its passes apart.
    """
    from datasets import Dataset, concatenate_datasets

    copies = max(1, math.ceil(epochs))
    tags = [f"{phase}{k}" if (phase != "main" or k) else "main" for k in range(copies)]
    passes = [Dataset.from_list([rewritten_row(row, rate, tag) for row in dataset]) for tag in tags]
    return concatenate_datasets(passes), epochs / copies
