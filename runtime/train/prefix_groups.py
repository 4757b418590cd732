"""Training batches whose examples share a prefix: the prefix runs once, forward and backward.

The stuffed baseline's examples all begin with the same ~4,700-token schema prompt and add
a few hundred tokens of their own; a plain padded batch of 8 runs that prompt 8 times.
Following Prefix Grouper (arXiv 2506.05433), a batch is packed into one row instead:

    [group's prefix][example a's own tokens][example b's own tokens] ... [next group's prefix] ...

- **Position ids** count the prefix from 0 and restart after it for every example, so each
  token keeps the position it has in its own example.
- **Attention** (``shared_prefix_attention``, registered with transformers'
  ``AttentionInterface``): a prefix attends to itself causally; each example's own tokens
  attend to their group's prefix and causally to themselves, never to another example.
  Every token so sees exactly the keys it sees in the plain batch, and its hidden state,
  logits and gradient are the plain ones up to float rounding
  (tests/train/test_prefix_groups.py).
- **Labels**: every token the plain batch trains is trained once. A group shares only a
  prefix whose tokens no example trains (the system prompt, masked by the plan), so the
  prefix's hidden states feed the loss only through the tokens that attend to them. The
  first own token of each example carries -100: it is predicted across an example
  boundary in the row, and in the plain batch it is a masked prefix token too.
- **attention_mask** says how many of the batch's examples each token stands for: the group's
  size on its prefix, 1 on own tokens. As a padding mask (transformers reads it as bool) it
  masks nothing; TRL counts ``num_tokens`` from its sum and the MoE load-balancing loss
  weights each token by it, so both are those of the plain batch.

What is saved is the prefix's own work (its layers, its attention to itself, their backward),
not each own token's attention to the prefix's keys, which every example still pays: on CPU
that attention is most of a stuffed batch's step (benchmarks/shared_prefix_train.py).

Examples are grouped by their first ``MIN_SHARED_PREFIX`` tokens (the inference path's
threshold, runtime.agent.shared_prefix); an example that shares them with no other one in
the batch is packed alone (a prefix of 0 tokens). A batch in which no two examples share a
prefix goes to the plain collator unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from runtime.agent.shared_prefix import MIN_SHARED_PREFIX, shared_prefix_length

__all__ = ["SHARED_PREFIX", "GROUPS_KEY", "PrefixGroup", "PackedGroups", "SharedPrefixError", "SharedPrefixCollator",
           "group_key", "shared_length", "pack_examples", "shared_prefix_attention", "use_shared_prefix"]

SHARED_PREFIX = "craft_shared_prefix"
# The forward keyword the packed batch's layout travels under, down to every attention call.
GROUPS_KEY = "prefix_groups"
IGNORE = -100


class SharedPrefixError(ValueError):
    """A batch or a model the shared-prefix path cannot take; the message says why and what to do."""


@dataclass(frozen=True)
class PrefixGroup:
    """One group of a packed row: its prefix at ``start`` (``prefix`` tokens, 0 for an example
    alone) and each example's own tokens after it, as ``(start, length)`` in the row."""

    start: int
    prefix: int
    rows: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PackedGroups:
    """The layout of a packed row (a dataclass, not a tuple: the Trainer passes it through as it is)."""

    groups: tuple[PrefixGroup, ...]
    length: int

    @property
    def examples(self) -> int:
        return sum(len(g.rows) for g in self.groups)


def group_key(input_ids) -> tuple[int, ...]:
    """What groups examples: their first ``MIN_SHARED_PREFIX`` tokens."""
    return tuple(input_ids[:MIN_SHARED_PREFIX])


def shared_length(input_ids: list[list[int]], labels: list[list[int]]) -> int:
    """Tokens a group can run once: those every example starts with, leaving each one token of
    its own, and none of them (nor the first own token) trained in any example.

    >>> shared_length([[1, 2, 3, 4], [1, 2, 3, 5]], [[-100] * 4, [-100, -100, 7, 5]])
    1
    >>> shared_length([[1, 2, 3, 4], [1, 2, 3, 5]], [[-100] * 4, [-100] * 3 + [5]])   # 5 is trained
    2
    >>> shared_length([[1, 2, 3, 4], [1, 2, 3, 5]], [[-100] * 4, [-100] * 4])
    3
    """
    n = shared_prefix_length(input_ids)
    for row in labels:
        # labels[1..n] must be -100: position t's label is predicted from position t - 1.
        trained = next((t for t in range(1, n + 1) if row[t] != IGNORE), None)
        if trained is not None:
            n = trained - 1
    return max(n, 0)


def pack_examples(examples: list[dict]) -> dict | None:
    """The packed row of ``examples`` (each with ``input_ids`` and ``labels``), or None if no two share a prefix.

    Returns ``{"input_ids", "labels", "position_ids", "attention_mask", GROUPS_KEY}``, the
    tensors of shape ``(1, tokens)``.
    """
    ids = [list(e["input_ids"]) for e in examples]
    labels = [list(e["labels"]) for e in examples]
    by_key: dict[tuple[int, ...], list[int]] = {}
    for i, row in enumerate(ids):
        by_key.setdefault(group_key(row), []).append(i)
    members = list(by_key.values())
    shared = [shared_length([ids[i] for i in m], [labels[i] for i in m]) if len(m) > 1 else 0 for m in members]
    if not any(s > 0 for s in shared):
        return None
    # A group that can share nothing (one example, or a trained first token) packs each example alone.
    packed_groups = []
    for m, s in zip(members, shared):
        packed_groups += [(m, s)] if s > 0 else [([i], 0) for i in m]
    tokens, targets, positions, weights, groups = [], [], [], [], []
    for group, s in packed_groups:
        start = len(tokens)
        tokens += ids[group[0]][:s]
        targets += [IGNORE] * s
        positions += range(s)
        weights += [len(group)] * s
        rows = []
        for i in group:
            own = ids[i][s:]
            rows.append((len(tokens), len(own)))
            tokens += own
            # The first own token is predicted across a boundary of the row: never a target here
            # (in the plain example it is position 0 or a masked prefix token).
            targets += [IGNORE] + labels[i][s + 1:]
            positions += range(s, s + len(own))
            weights += [1] * len(own)
        groups.append(PrefixGroup(start, s, tuple(rows)))
    row = {name: torch.tensor([values], dtype=torch.long) for name, values in
           (("input_ids", tokens), ("labels", targets), ("position_ids", positions), ("attention_mask", weights))}
    return {**row, GROUPS_KEY: PackedGroups(tuple(groups), len(tokens))}


class SharedPrefixCollator:
    """A collator that packs a batch sharing a prefix (``pack_examples``) and leaves any other
    batch to ``plain`` (TRL's collator), which pads it as before."""

    def __init__(self, plain):
        self.plain = plain

    def __call__(self, examples: list[dict]) -> dict:
        packed = pack_examples(examples) if len(examples) > 1 else None
        return self.plain(examples) if packed is None else packed


def _lower_right_causal(queries: int, prefix: int, device) -> torch.Tensor:
    """sdpa's bool mask of ``queries`` own tokens over ``[prefix][own]`` keys: the whole prefix, then causal."""
    return torch.ones(queries, prefix + queries, dtype=torch.bool, device=device).tril(diagonal=prefix)[None, None]


def shared_prefix_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                            scaling: float | None = None, **kwargs):
    """sdpa's attention; in a packed batch (``prefix_groups`` given), group by group.

    ``query`` is ``(1, heads, tokens, dim)``, ``key``/``value`` ``(1, kv_heads, tokens, dim)``.
    Each prefix is one causal sdpa call; each example's own tokens one call over its group's
    prefix keys and its own (the prefix's keys are sliced, not recomputed). Without
    ``prefix_groups`` this is sdpa unchanged, so the model generates and evaluates as before.
    """
    layout: PackedGroups | None = kwargs.pop(GROUPS_KEY, None)
    if layout is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    if query.shape[0] != 1 or key.shape[2] != layout.length or query.shape[2] != layout.length:
        raise SharedPrefixError(f"a packed shared-prefix batch is one row of {layout.length} tokens; the attention "
                                f"got {query.shape[0]} row(s) of {query.shape[2]} queries over {key.shape[2]} keys "
                                "(a cache or a second batch in the same forward)")
    if kwargs.get("sliding_window") is not None or getattr(module, "sinks", None) is not None:
        raise SharedPrefixError("this model's attention has a sliding window or attention sinks, which the "
                                "shared-prefix path does not compute; train it with `sampler random`")
    kwargs.pop("sliding_window", None)
    pieces = []

    def sdpa(q, k, v, mask):
        return sdpa_attention_forward(module, q, k, v, mask, dropout=dropout, scaling=scaling, is_causal=mask is None,
                                      **kwargs)[0]

    for group in layout.groups:
        a, s = group.start, group.prefix
        prefix_k, prefix_v = key[:, :, a:a + s], value[:, :, a:a + s]
        if s:
            pieces.append(sdpa(query[:, :, a:a + s], prefix_k, prefix_v, None))
        for b, n in group.rows:
            own_k, own_v = key[:, :, b:b + n], value[:, :, b:b + n]
            if s:
                pieces.append(sdpa(query[:, :, b:b + n], torch.cat([prefix_k, own_k], dim=2),
                                   torch.cat([prefix_v, own_v], dim=2), _lower_right_causal(n, s, query.device)))
            else:
                pieces.append(sdpa(query[:, :, b:b + n], own_k, own_v, None))
    return torch.cat(pieces, dim=1), None


AttentionInterface.register(SHARED_PREFIX, shared_prefix_attention)
# A packed batch's attention_mask masks nothing, so sdpa's mask builder returns None for it (is_causal);
# any other batch gets sdpa's mask as before.
AttentionMaskInterface.register(SHARED_PREFIX, sdpa_mask)


def use_shared_prefix(model, fix: str = "train it with `sampler random`") -> None:
    """Make ``model`` (a PreTrainedModel, or a PEFT model around one) attend with ``shared_prefix_attention``.

    Its pieces run on sdpa whatever kernel the model had; a batch without ``prefix_groups``
    attends as sdpa does. The setting is not saved with the model (transformers drops it from
    config.json). ``fix`` ends the message of a model the path cannot take: the setting to change.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    text_config = base.config.get_text_config()
    if getattr(text_config, "sliding_window", None) is not None and getattr(text_config, "use_sliding_window", True):
        raise SharedPrefixError(f"{type(base).__name__} attends within a sliding window of "
                                f"{text_config.sliding_window} tokens, which the shared-prefix path does not "
                                f"compute; {fix}")
    base.set_attn_implementation(SHARED_PREFIX)
