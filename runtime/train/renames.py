"""Warm-up examples with made-up names (`stage sft { prefix_renames N }`).

A model trained from scratch on a few dozen questions per workflow learns the names in
them by heart: asked about "Maple Home", its reasoning block restates a training question
about "Prime Labs". A renamed example is a conversation's first turn (the question and the
reasoning block, as the warm-up cuts it, or on through its last code block with
`prefix_renames_through code`) with every name the conversation asks about, its
string parameters (an advertiser, an industry, a channel), replaced by a made-up word of
the same shape, the same everywhere in the example. No training question holds those
words, so the only way to write them is to copy them from the question.

The names come from the dataset's `names` column (the dataset step writes the string
parameters of each conversation's instance there). Numbers are left as they are: every
number a held-out question asks already appears in training questions. Made-up words are
drawn from a seeded stream per conversation, so the same dataset gives the same examples.
"""

from __future__ import annotations

import random
import re

__all__ = ["made_up", "renamed_examples"]

# Short syllables that read as a name and that BPE tokenizers split into a few pieces.
_SYLLABLES = ("ka", "lo", "mi", "ve", "dra", "sun", "tor", "pel", "qui", "zan", "bor", "ni", "ru", "fex", "ga",
              "hol", "ja", "ster", "wi", "mon", "cla", "tre", "vo", "lis", "pa", "ren", "go", "bri", "xu", "del")


def made_up(value: str, rng: random.Random) -> str:
    """`value` with each run of letters replaced by a made-up word of the same case.

    Example:
        >>> made_up("Maple Home", random.Random(0))
        'Paxufex Quija'
        >>> made_up("in_market", random.Random(0))
        'paxufex_quija'
    """
    def word(match: re.Match) -> str:
        letters = match.group()
        new = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))
        if letters.isupper() and len(letters) > 1:
            return new.upper()
        return new.capitalize() if letters[0].isupper() else new
    return re.sub(r"[A-Za-z]+", word, value)


def _whole(name: str) -> re.Pattern:
    """`name` where it stands as a whole word (not `search` inside `research`)."""
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")


def _rename(text: str, renames: dict[str, str]) -> str:
    """Every whole-word occurrence of each name in `text`, renamed; longer names first."""
    for name in sorted(renames, key=len, reverse=True):
        text = _whole(name).sub(renames[name], text)
    return text


def renamed_examples(first_turn: list[dict], names: list[str], count: int, seed: str) -> list[list[dict]]:
    """`count` copies of `first_turn` (a warm-up example's messages) with `names` made up.

    The system prompt is kept as it is. No copy when the question names none of `names`:
    the example would only repeat the original.

    Example:
        >>> turn = [{"role": "system", "content": "Maple Home is a client."},
        ...         {"role": "user", "content": "Top 3 campaigns of Maple Home?"},
        ...         {"role": "assistant", "content": "<THINK>advertiser = Maple Home</THINK>"}]
        >>> [m["content"] for m in renamed_examples(turn, ["Maple Home"], 1, "x")[0]]
        ['Maple Home is a client.', 'Top 3 campaigns of Gaqui Xupelni?', '<THINK>advertiser = Gaqui Xupelni</THINK>']
        >>> renamed_examples(turn, ["search"], 1, "x")
        []
    """
    question = next((m.get("content") or "" for m in first_turn if m["role"] == "user"), "")
    asked = [name for name in names if name and _whole(name).search(question)]
    if not asked:
        return []
    out = []
    for k in range(count):
        rng = random.Random(f"{seed}:rename:{k}")
        renames = {name: made_up(name, rng) for name in asked}
        out.append([dict(m) if m["role"] == "system" else {**m, "content": _rename(m.get("content") or "", renames)}
                    for m in first_turn])
    return out
