"""Prefilling a batch's shared prompt prefix once instead of once per conversation.

Every call of an arm starts with the same system prompt, and the stuffed baseline's is
the whole schema: about 5,000 tokens, against a few hundred for the question and the
conversation so far. Batched ``generate`` with left padding computes the keys and values
of that prefix once per conversation in the batch, and again in every later batch; on a
CPU that prefill is most of the stuffed arm's eval time. Here the prefix is run through
the model once, its cache repeated over the batch, and each row's own tokens follow it
after padding in the middle:

    [shared prefix][pad pad][row's own tokens]      attention mask  1..1 0 0 1..1

``generate`` derives position ids from the attention mask (its cumulative sum), so a
row's own tokens take the positions they have in the unpadded prompt, and the masked
pads are never attended to: the logits are those of the plain path, up to float
rounding (tests/agent/test_shared_prefix.py holds the two paths' log-probs together).

Only a cache of full-attention layers (``DynamicLayer``) takes this path: a sliding
window or a linear-attention state would see the pads as tokens.
"""

from __future__ import annotations

import copy
import inspect

__all__ = ["MIN_SHARED_PREFIX", "shared_prefix_length", "cache_keyword", "prefix_cache", "middle_padded", "batch_cache"]

# Below this many shared tokens the saving is smaller than the bookkeeping.
MIN_SHARED_PREFIX = 64


def shared_prefix_length(prompts: list[list[int]]) -> int:
    """Tokens every prompt starts with, leaving each at least one token of its own.

    >>> shared_prefix_length([[1, 2, 3, 4], [1, 2, 5]])
    2
    >>> shared_prefix_length([[1, 2, 3], [1, 2, 3]])   # the last token stays each row's own
    2
    """
    limit = min(len(p) for p in prompts) - 1
    first = prompts[0]
    n = 0
    while n < limit and all(p[n] == first[n] for p in prompts):
        n += 1
    return n


def cache_keyword() -> str:
    """What ``forward``, ``generate`` and model outputs call the KV cache in this transformers.

    5.24 renamed ``past_key_values`` to ``cache``; pyproject allows 5.23, and the old name
    is deprecated in the newer ones, so the name is read off the output class.
    """
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def prefix_cache(model, ids: list[int]):
    """The model's cache after reading ``ids`` (one row), or None where the path does not apply."""
    import torch
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    name = cache_keyword()
    # Only the cache is wanted: logits for one position, not for every prefix token (a
    # 5,000-token schema prompt's would be 5,000 x the vocabulary, ~1 GB for SmolLM2's).
    keep = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], device=model.device), use_cache=True, output_router_logits=False,
                    **keep, **{name: DynamicCache(config=model.config)})
    cache = getattr(out, name, None)          # a model whose output carries no cache: pad plainly
    if cache is None or not all(type(layer) is DynamicLayer for layer in cache.layers):
        return None
    return cache


def batch_cache(cache, rows: int):
    """A copy of a one-row ``cache`` repeated over ``rows`` rows (``generate`` extends its copy)."""
    batch = copy.deepcopy(cache)
    batch.batch_repeat_interleave(rows)
    return batch


def middle_padded(prompts: list[list[int]], shared: int, pad_id: int):
    """``input_ids`` and ``attention_mask``: the shared prefix, pads, then each row's own tokens.

    With ``shared`` 0 this is plain left padding.

    >>> ids, mask = middle_padded([[7, 7, 1], [7, 7, 2, 3]], 2, 0)
    >>> ids.tolist(), mask.tolist()
    ([[7, 7, 0, 1], [7, 7, 2, 3]], [[1, 1, 0, 1], [1, 1, 1, 1]])
    >>> middle_padded([[5], [6, 7]], 0, 0)[0].tolist()
    [[0, 5], [6, 7]]
    """
    import torch

    own = [p[shared:] for p in prompts]
    width = shared + max(len(o) for o in own)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, (prompt, tail) in enumerate(zip(prompts, own)):
        input_ids[row, :shared] = torch.tensor(prompt[:shared])
        attention[row, :shared] = 1
        input_ids[row, width - len(tail):] = torch.tensor(tail)
        attention[row, width - len(tail):] = 1
    return input_ids, attention
