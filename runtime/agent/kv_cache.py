"""A KV cache that appends each generated token in place instead of copying the whole cache.

``transformers``' ``DynamicLayer`` grows by ``torch.cat``: every generated token copies
every key and value cached so far, for every layer. With the stuffed baseline's ~5,000-token
schema prompt that copy, not the attention, is most of a decoding step on a CPU: 68% of
its CPU time at batch 32 (``torch.profiler``, the default profile's stuffed model).
``GrowingLayer`` keeps the keys and values in a buffer with spare room, doubled when it
runs out, and hands the attention a view of the filled part: the same tensors by value, so decoding is bit for bit
the same (tests/agent/test_kv_cache.py), at a copy per doubling instead of per token.
``benchmarks/eval_batch.py`` times whole eval calls with it.

Only plain full-attention layers (``DynamicLayer``) are replaced: a sliding window or a
linear-attention state keeps the layer its model chose.
"""

from __future__ import annotations

# Imported by HFGenerator when it first decodes, so `import runtime.agent` stays light.
from transformers.cache_utils import DynamicLayer

__all__ = ["GrowingLayer", "growing", "growing_cache"]

# The first buffer's room in tokens; enough for a short prompt and its first replies.
FIRST_ROOM = 256


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` whose ``update`` writes into spare room instead of concatenating.

    ``keys``/``values`` stay what ``DynamicLayer``'s other methods read (its crop, batch
    repeat and select replace or slice them): while they are a view of this layer's buffer,
    the next tokens are written after them; once anything replaced them, they seed a new
    buffer.
    """

    _keys_room = None
    _values_room = None

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        filled, adding = self.get_seq_length(), key_states.shape[-2]
        room = self._keys_room.shape[-2] if self._owns_keys() else 0
        if filled + adding > room:
            self._grow(max(2 * room, filled + adding, FIRST_ROOM), filled, key_states, value_states)
        self._keys_room[..., filled:filled + adding, :] = key_states
        self._values_room[..., filled:filled + adding, :] = value_states
        self.keys = self._keys_room[..., :filled + adding, :]
        self.values = self._values_room[..., :filled + adding, :]
        return self.keys, self.values

    def _owns_keys(self) -> bool:
        """Whether ``keys``/``values`` are still the start of this layer's buffers."""
        if self._keys_room is None or self.keys is None or self.keys.numel() == 0:
            return False
        return all(part.data_ptr() == room.data_ptr() and part.stride() == room.stride()
                   for part, room in ((self.keys, self._keys_room), (self.values, self._values_room)))

    def _grow(self, size: int, filled: int, key_states, value_states) -> None:
        shape = (*key_states.shape[:-2], size, key_states.shape[-1])
        keys, values = key_states.new_empty(shape), value_states.new_empty(shape)
        if filled:
            keys[..., :filled, :] = self.keys
            values[..., :filled, :] = self.values
        self._keys_room, self._values_room = keys, values


def growing(cache):
    """``cache`` with each plain ``DynamicLayer`` turned into a ``GrowingLayer`` holding the same tensors."""
    for i, layer in enumerate(cache.layers):
        if type(layer) is DynamicLayer:
            grown = GrowingLayer()
            grown.__dict__.update(layer.__dict__)
            cache.layers[i] = grown
    return cache


def growing_cache(model):
    """An empty cache for ``model.generate`` whose full-attention layers grow in place."""
    from transformers import DynamicCache

    return growing(DynamicCache(config=model.config))
