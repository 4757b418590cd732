"""A decoding aid for small models: favour the tokens of the questions asked.

`eval { copy_bias B }` adds B to the logit of every token the conversation's questions
(its user messages so far) are written with, at every generated position, in every arm.
A small model trained from scratch writes the training question it recalls best instead
of the one asked ("Which 6 campaigns of Prime Academy ..." for a question about Maple
Home): the asked names and numbers are a few tokens away in its context, but nothing in
its training made copying them likelier than recalling others. The bias does, at
decoding time, for the names and numbers of this conversation only. Every question
asked so far counts, not only the latest: a follow-up ("Only travel advertisers") keeps
the first question's numbers and names, and its code writes them again.

What is raised is the questions' words (runs of letters, digits and underscores), each
written alone and after a space: a word is different tokens depending on what stands
before it, after a space in the question (`ĠMaple`) and after a quote in the code
(`'Maple Home'`: `Maple`). Punctuation is not raised: with the questions' `,` and `?`
raised too, more of the code failed to run (docs/evaluation.md). Special tokens (end of
turn, padding) are never raised, so the bias never ends or prolongs a reply by itself.

A user's pretrained model already copies from its prompt and would not need this; the
setting exists to measure what copying is worth to a model that does not
(docs/evaluation.md, "Copy bias"). GRPO samples without it: a biased sampler is not the
policy the gradient assumes.
"""

from __future__ import annotations

import re

__all__ = ["CopyBiasProcessor", "asked_text", "asked_token_ids"]

_WORD = re.compile(r"[A-Za-z0-9_]+")


def asked_text(messages: list[dict]) -> str:
    """The conversation's user messages (the questions asked so far), one per line.

    >>> asked_text([{"role": "system", "content": "schema"}, {"role": "user", "content": "q1"},
    ...             {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"},
    ...             {"role": "tool", "content": "error"}])
    'q1\\nq2'
    """
    return "\n".join(m["content"] for m in messages if m["role"] == "user")


def asked_token_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Sorted ids of the tokens the questions' words are written with, alone or after a space."""
    ids: set[int] = set()
    for word in set(_WORD.findall(asked_text(messages))):
        ids.update(tokenizer.encode(word, add_special_tokens=False))
        ids.update(tokenizer.encode(" " + word, add_special_tokens=False))
    return sorted(ids - set(tokenizer.all_special_ids))


class CopyBiasProcessor:
    """A ``transformers`` logits processor adding ``bias`` to each row's asked tokens.

    ``rows`` holds one list of token ids per row of the batch being generated, in the
    batch's order (:func:`asked_token_ids` of each conversation).
    """

    def __init__(self, rows: list[list[int]], bias: float):
        self.rows, self.bias = rows, bias
        self._mask = None

    def __call__(self, input_ids, scores):
        import torch

        if self._mask is None or self._mask.shape != scores.shape:
            mask = torch.zeros(scores.shape, dtype=scores.dtype, device=scores.device)
            for row, ids in enumerate(self.rows):
                kept = [i for i in ids if i < scores.shape[-1]]
                mask[row, kept] = self.bias
            self._mask = mask
        return scores + self._mask
