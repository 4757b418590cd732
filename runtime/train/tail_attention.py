"""Training attention whose last layer computes only the positions the loss reads.

A stuffed example is a ~5,000-token schema prompt and a few hundred trained tokens at
its end. The loss reads the last layer's output only at positions whose next token is
trained (runtime.train.loss_head), and the last layer's output at a position feeds
nothing else: no later layer reads it. So in that layer the queries before the first
trained position need not attend at all. Their keys and values still do (the trained
queries attend to them), so the layer computes every key and value and only the tail
of the queries: a `(tail, all keys)` attention instead of `(all, all)`. On the stuffed
arm's examples that is a third of the attention arithmetic, which is most of a step.

The skipped positions' attention output is zeros; what the rest of the layer makes of
them is never read by the loss, so the loss and every gradient are sdpa's up to float
rounding (tests/train/test_tail_attention.py). Two cases would read them, and keep
sdpa: an MoE model whose router logits enter the loss (`output_router_logits`: the
load-balancing loss averages over every position), and gradient checkpointing (the
backward pass recomputes the layer outside this switch).

The loss head switches a model to this function for one forward whose first trained
position is `MIN_TAIL_START` or later, and only from sdpa; below that the saving is
small and the craft arm's examples (first trained position at most 989 in the ads
default) keep sdpa's exact floats.
"""

from __future__ import annotations

import contextlib
import contextvars

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

__all__ = ["LAST_LAYER_TAIL", "MIN_TAIL_START", "last_layer_tail", "tail_attention"]

LAST_LAYER_TAIL = "craft_last_layer_tail"

# The first trained position from which the switch is worth a second mask and a copy.
MIN_TAIL_START = 1024

# The first query position the last layer computes in the current block; 0 outside one.
_TAIL_START: contextvars.ContextVar[int] = contextvars.ContextVar("craft_tail_start", default=0)


def tail_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                   scaling: float | None = None, **kwargs):
    """sdpa's attention; in the model's last layer, only for the queries from the block's start on.

    ``query`` is ``(rows, heads, positions, dim)``; ``attention_mask`` sdpa's mask
    ``(rows, 1, positions, positions)`` or None (causal, no padding). Returns sdpa's
    ``(rows, positions, heads, dim)`` with zeros before the start in the last layer.
    """
    start = _TAIL_START.get()
    layer = getattr(module, "layer_idx", None)
    last = getattr(getattr(module, "config", None), "num_hidden_layers", None)
    positions = query.shape[2]
    if not start or layer is None or layer != (last or 0) - 1 or key.shape[2] != positions or start >= positions:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    if attention_mask is None:
        # Causal, aligned at the end: the tail's query i (position start + i) sees keys 0..start + i.
        attention_mask = torch.ones(positions - start, positions, dtype=torch.bool,
                                    device=query.device).tril(diagonal=start)[None, None]
    else:
        attention_mask = attention_mask[:, :, start:, :]
    kwargs.pop("is_causal", None)
    out, _ = sdpa_attention_forward(module, query[:, :, start:], key, value, attention_mask, dropout=dropout,
                                    scaling=scaling, is_causal=False, **kwargs)
    rows, _, heads, dim = out.shape
    return torch.cat([out.new_zeros(rows, start, heads, dim), out], dim=1), None


AttentionInterface.register(LAST_LAYER_TAIL, tail_attention)
AttentionMaskInterface.register(LAST_LAYER_TAIL, sdpa_mask)


@contextlib.contextmanager
def last_layer_tail(model, start: int, min_start: int | None = None):
    """Inside the block ``model``'s last layer attends only from query position ``start`` on.

    Only a model on sdpa switches, without router logits in its loss and without gradient
    checkpointing, and only when ``start`` is at least ``min_start`` (`MIN_TAIL_START`).
    Yields whether it switched.
    """
    min_start = MIN_TAIL_START if min_start is None else min_start
    config = model.config
    before = config._attn_implementation
    text_config = config.get_text_config()
    if (before != "sdpa" or start < min_start or getattr(text_config, "output_router_logits", False)
            or getattr(model, "is_activation_checkpointing", False)):
        yield False
        return
    token = _TAIL_START.set(start)
    config._attn_implementation = LAST_LAYER_TAIL
    try:
        yield True
    finally:
        config._attn_implementation = before
        _TAIL_START.reset(token)
