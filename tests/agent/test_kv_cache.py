"""The generation cache appends in place and holds exactly what concatenation would."""

import copy

import torch
from transformers.cache_utils import DynamicLayer

from runtime.agent import HFGenerator
from runtime.agent.kv_cache import FIRST_ROOM, GrowingLayer, growing, growing_cache


def states(rows=2, tokens=1, seed=0):
    """Keys and values shaped [rows, heads, tokens, head_dim], as a layer receives them."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 2, tokens, 4, generator=gen), torch.randn(rows, 2, tokens, 4, generator=gen)


def test_a_growing_layer_returns_what_a_concatenating_layer_returns_token_after_token():
    plain, grown = DynamicLayer(), GrowingLayer()
    # A prompt longer than the first room, then single tokens past the first doubling.
    steps = [FIRST_ROOM + 10] + [1] * (FIRST_ROOM + 5)
    for i, n in enumerate(steps):
        k, v = states(tokens=n, seed=i)
        expected, got = plain.update(k, v), grown.update(k, v)
        assert torch.equal(expected[0], got[0]) and torch.equal(expected[1], got[1])
    assert grown.get_seq_length() == plain.get_seq_length() == sum(steps)
    # The room grew by doubling, not by a token at a time.
    assert grown._keys_room.shape[-2] == 2 * (FIRST_ROOM + 10)


def test_after_a_crop_or_a_batch_repeat_the_next_tokens_land_in_the_right_place():
    plain, grown = DynamicLayer(), GrowingLayer()
    for layer in (plain, grown):
        layer.update(*states(tokens=5))
        layer.crop(-2)                       # generate's assisted decoding drops rejected tokens
        layer.update(*states(tokens=1, seed=1))
        layer.batch_repeat_interleave(3)     # a one-row prefix repeated over a batch
        layer.update(*states(rows=6, tokens=1, seed=2))
    assert torch.equal(plain.keys, grown.keys) and torch.equal(plain.values, grown.values)
    assert grown.get_seq_length() == 5


def test_growing_turns_a_filled_cache_into_growing_layers_that_keep_its_tensors():
    from transformers import DynamicCache

    cache = DynamicCache(config=_config().config)
    prefix = states(tokens=3)
    cache.layers[0].update(*prefix)
    grown = growing(cache)
    assert all(type(layer) is GrowingLayer for layer in grown.layers)
    assert torch.equal(grown.layers[0].keys, prefix[0]) and grown.layers[0].get_seq_length() == 3
    keys, _ = grown.layers[0].update(*states(tokens=1, seed=1))
    assert torch.equal(keys, torch.cat([prefix[0], states(tokens=1, seed=1)[0]], dim=-2))
    assert all(type(layer) is GrowingLayer for layer in growing_cache(_config()).layers)


def test_decoding_with_the_growing_cache_is_bit_for_bit_that_of_the_plain_cache(tiny_model):
    model, tok = tiny_model
    tok = copy.deepcopy(tok)
    tok.eos_token = "<|im_start|>"          # never written by the untrained model: every row decodes all tokens
    asks = [[{"role": "user", "content": q}] for q in ("Top 3 campaigns by budget", "Rank campaigns")]
    ours = HFGenerator(model, tok, max_new_tokens=16, batch_size=2)(asks)
    ids = [torch.tensor(g.prompt_ids) for g in ours]
    width = max(len(i) for i in ids)
    input_ids = torch.stack([torch.cat([torch.full((width - len(i),), tok.pad_token_id), i]) for i in ids])
    attention = (torch.arange(width)[None, :] >= torch.tensor([width - len(i) for i in ids])[:, None]).long()
    with torch.no_grad():
        plain = model.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=16, do_sample=False,
                               pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                               output_router_logits=False)
    assert all(len(g.completion_ids) == 16 for g in ours)
    assert [g.completion_ids for g in ours] == plain[:, width:].tolist()


def _config():
    """A model-shaped object: ``DynamicCache(config=...)`` reads only the config."""
    from transformers import Qwen3MoeConfig

    class Model:
        config = Qwen3MoeConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                intermediate_size=16, moe_intermediate_size=8, num_experts=2, num_experts_per_tok=1)
    return Model()
