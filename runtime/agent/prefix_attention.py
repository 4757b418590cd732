"""Decoding attention that reads a batch's shared prefix once, not once per row.

``runtime.agent.shared_prefix`` prefills the prompt prefix a batch shares (the stuffed
baseline's ~5,000-token schema prompt) once and repeats its cache over the batch's rows.
Every decoding step then still attends each row to its own copy: with 32 rows that is
32 copies of the prefix's keys and values read per generated token, and on a CPU that
read was 63% of the stuffed arm's eval time (py-spy, the default profile).

Here a decoding step splits each row's attention in two and merges them exactly:

- the shared prefix, whose keys and values are the same tensors in every row (one row's
  cache, repeated), attended by every row's queries at once against row 0's copy: one
  matrix product that reads the prefix once;
- the row's own tokens after it (its pads masked), attended row by row.

Each part keeps its softmax's maximum and sum, and the two are combined as one softmax
over all keys would be (the log-sum-exp merge of blockwise attention): the output is
sdpa's up to float rounding (tests/agent/test_prefix_attention.py). Prefill (more than a
few query positions) and any call without a shared prefix take sdpa unchanged.

``HFGenerator`` switches the model to this function only for a ``generate`` call whose
batch repeats one prefix cache, and says how long that prefix is (``prefix_once``: a
context variable, as ``generate`` passes no keyword it does not know to the attention).
"""

from __future__ import annotations

import contextlib
import contextvars

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

__all__ = ["PREFIX_ONCE", "MAX_SPLIT_QUERIES", "MIN_PREFIX_ONCE", "prefix_once_attention", "prefix_once"]

PREFIX_ONCE = "craft_prefix_once"

# Query positions per row up to which the split path runs: a decoding step has one; a
# prefill has hundreds, whose prefix scores (rows x queries x prefix) would not fit.
MAX_SPLIT_QUERIES = 4

# The shortest shared prefix worth the split: it saves reading the prefix's other rows' copies
# and costs a second softmax and the merge. Measured on an eval batch of 32 (benchmarks/
# prefix_attention.py): a 4,734-token schema prompt decoded in 5.4 s instead of 11.0 s; a
# 64-token one in 2.3 s instead of 2.0 s.
MIN_PREFIX_ONCE = 1024

# The shared prefix's length in the current `prefix_once` block; 0 outside one.
_SHARED_PREFIX: contextvars.ContextVar[int] = contextvars.ContextVar("craft_shared_prefix", default=0)


def _blockwise(scores: torch.Tensor, values: torch.Tensor):
    """(max, sum of exp, unnormalised output) of softmax(scores) @ values, safe for fully masked rows."""
    top = scores.amax(-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    weights = torch.exp(scores - top)
    return top, weights.sum(-1, keepdim=True), torch.matmul(weights, values)


def prefix_once_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                          scaling: float | None = None, **kwargs):
    """sdpa's attention, with a decoding step's shared prefix read once for the batch.

    ``query`` is ``(rows, heads, queries, dim)``, ``key``/``value`` ``(rows, kv_heads, keys, dim)``
    whose first keys, as many as the ``prefix_once`` block says, are the same in every row;
    ``attention_mask`` is sdpa's mask ``(rows, 1, queries, keys)`` or None.
    """
    rows, heads, queries, dim = query.shape
    prefix = _SHARED_PREFIX.get()
    if not prefix or rows < 2 or queries > MAX_SPLIT_QUERIES or key.shape[2] <= prefix or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    kv_heads = key.shape[1]
    groups = heads // kv_heads
    scale = scaling if scaling is not None else dim ** -0.5
    # Each key/value head's query heads side by side: (rows, kv_heads, groups * queries, dim).
    # In float32, as sdpa accumulates: a half-precision sum of thousands of exponentials is not.
    # (Only the slices read are converted: a float32 model's are not copied.)
    q = query.reshape(rows, kv_heads, groups * queries, dim).float()

    # The prefix: every row's queries against row 0's copy, (kv_heads, rows * groups * queries, prefix).
    flat = q.transpose(0, 1).reshape(kv_heads, rows * groups * queries, dim)
    p_top, p_sum, p_out = _blockwise(torch.matmul(flat, key[0, :, :prefix].float().transpose(-1, -2)) * scale,
                                     value[0, :, :prefix].float())
    p_top, p_sum, p_out = (t.reshape(kv_heads, rows, groups * queries, t.shape[-1]).transpose(0, 1)
                           for t in (p_top, p_sum, p_out))

    # Each row's own keys: (rows, kv_heads, groups * queries, own).
    scores = torch.matmul(q, key[:, :, prefix:].float().transpose(-1, -2)) * scale
    if attention_mask is not None:
        mask = attention_mask[:, :, :, prefix:key.shape[2]]
        mask = mask.unsqueeze(2).expand(-1, -1, groups, -1, -1).reshape(rows, mask.shape[1], groups * queries, -1)
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    o_top, o_sum, o_out = _blockwise(scores, value[:, :, prefix:].float())

    top = torch.maximum(p_top, o_top)
    p_weight, o_weight = torch.exp(p_top - top), torch.exp(o_top - top)
    out = (p_out * p_weight + o_out * o_weight) / (p_sum * p_weight + o_sum * o_weight)
    return out.reshape(rows, heads, queries, dim).transpose(1, 2).contiguous().to(query.dtype), None


AttentionInterface.register(PREFIX_ONCE, prefix_once_attention)
AttentionMaskInterface.register(PREFIX_ONCE, sdpa_mask)


@contextlib.contextmanager
def prefix_once(model, shared: int):
    """Inside the block ``model`` attends with ``prefix_once_attention``, its rows sharing their first ``shared`` keys.

    Only a model on sdpa switches, and only for a prefix of ``MIN_PREFIX_ONCE`` tokens or
    more; another kernel (eager, flash) stays as the user chose it.
    """
    config = model.config
    before = config._attn_implementation
    if before != "sdpa" or shared < MIN_PREFIX_ONCE:
        yield False
        return
    token = _SHARED_PREFIX.set(shared)
    config._attn_implementation = PREFIX_ONCE
    try:
        yield True
    finally:
        config._attn_implementation = before
        _SHARED_PREFIX.reset(token)
