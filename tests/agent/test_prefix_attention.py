"""A decoding step reads a batch's shared prefix once, and attends exactly as sdpa does."""

import copy
import types

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from runtime.agent import HFGenerator
from runtime.agent import prefix_attention
from runtime.agent.prefix_attention import (
    MAX_SPLIT_QUERIES, MIN_PREFIX_ONCE, PREFIX_ONCE, prefix_once, prefix_once_attention,
)

ROWS, HEADS, KV_HEADS, DIM, PREFIX = 3, 4, 2, 8, 40


def batch(queries: int, own: int, seed: int = 0):
    """Queries, keys and values whose first PREFIX keys are one row's, repeated (as `batch_cache` makes them)."""
    g = torch.Generator().manual_seed(seed)
    shared = torch.randn(1, KV_HEADS, PREFIX, DIM, generator=g).expand(ROWS, -1, -1, -1)
    key = torch.cat([shared, torch.randn(ROWS, KV_HEADS, own, DIM, generator=g)], dim=2)
    shared_v = torch.randn(1, KV_HEADS, PREFIX, DIM, generator=g).expand(ROWS, -1, -1, -1)
    value = torch.cat([shared_v, torch.randn(ROWS, KV_HEADS, own, DIM, generator=g)], dim=2)
    query = torch.randn(ROWS, HEADS, queries, DIM, generator=g)
    return query, key.contiguous(), value.contiguous()


def padded_mask(queries: int, own: int, pads: list[int]):
    """sdpa's boolean mask: the prefix seen by all, then each row's pads hidden (middle padding)."""
    mask = torch.ones(ROWS, 1, queries, PREFIX + own, dtype=torch.bool)
    for row, n in enumerate(pads):
        mask[row, :, :, PREFIX:PREFIX + n] = False
    return mask


MODULE = types.SimpleNamespace(num_key_value_groups=HEADS // KV_HEADS, is_causal=True)
SCALE = DIM ** -0.5


def sdpa(query, key, value, mask):
    return sdpa_attention_forward(MODULE, query, key, value, mask, scaling=SCALE)[0]


def split(query, key, value, mask, prefix=PREFIX):
    """The attention as a `prefix_once` block of a ``prefix``-token shared prefix runs it."""
    token = prefix_attention._SHARED_PREFIX.set(prefix)
    try:
        return prefix_once_attention(MODULE, query, key, value, mask, scaling=SCALE)[0]
    finally:
        prefix_attention._SHARED_PREFIX.reset(token)


@pytest.mark.parametrize("queries", [1, 2, MAX_SPLIT_QUERIES])
def test_a_decoding_step_gives_sdpas_output_with_rows_padded_differently(queries):
    own = 6
    query, key, value = batch(queries, own)
    mask = padded_mask(queries, own, pads=[0, 2, 5])
    got, expected = split(query, key, value, mask), sdpa(query, key, value, mask)
    assert got.shape == expected.shape == (ROWS, queries, HEADS, DIM)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_without_a_mask_every_key_is_attended():
    query, key, value = batch(1, 4)
    torch.testing.assert_close(split(query, key, value, None), sdpa(query, key, value, None), atol=1e-5, rtol=1e-5)


def test_a_prefill_a_lone_row_and_a_call_outside_the_block_are_sdpa_itself():
    query, key, value = batch(MAX_SPLIT_QUERIES + 1, 8)
    mask = padded_mask(MAX_SPLIT_QUERIES + 1, 8, pads=[0, 1, 2])
    assert torch.equal(split(query, key, value, mask), sdpa(query, key, value, mask))          # a prefill
    step = query[:, :, :1], key, value, mask[:, :, :1]
    assert torch.equal(split(*step, prefix=0), sdpa(*step))                                      # outside a block
    lone = query[:1, :, :1], key[:1], value[:1], mask[:1, :, :1]
    assert torch.equal(split(*lone), sdpa(*lone))                                                # one row


def test_the_block_switches_an_sdpa_model_and_restores_it(tiny_model):
    model, _ = tiny_model
    assert model.config._attn_implementation == "sdpa"
    with prefix_once(model, MIN_PREFIX_ONCE) as switched:
        assert switched and model.config._attn_implementation == PREFIX_ONCE
        assert prefix_attention._SHARED_PREFIX.get() == MIN_PREFIX_ONCE
    assert model.config._attn_implementation == "sdpa" and prefix_attention._SHARED_PREFIX.get() == 0
    # A short prefix (the stripped arms' prompt) costs the split more than it saves.
    with prefix_once(model, MIN_PREFIX_ONCE - 1) as switched:
        assert not switched and model.config._attn_implementation == "sdpa"


def test_a_model_on_another_kernel_keeps_it(tiny_model):
    model, _ = tiny_model
    eager = copy.deepcopy(model)
    eager.set_attn_implementation("eager")
    with prefix_once(eager, MIN_PREFIX_ONCE) as switched:
        assert not switched and eager.config._attn_implementation == "eager"


def test_a_generator_decodes_a_shared_schema_prompt_through_the_split(tiny_model, monkeypatch):
    model, tok = tiny_model
    tok = copy.deepcopy(tok)
    tok.eos_token = "<|im_start|>"          # never written: every row decodes all its tokens
    monkeypatch.setattr(prefix_attention, "MIN_PREFIX_ONCE", 64)   # this schema is ~150 tokens
    split_calls = []
    real = prefix_attention._blockwise
    monkeypatch.setattr(prefix_attention, "_blockwise", lambda *a: split_calls.append(1) or real(*a))
    schema = " ".join(f"Table campaign{i} has columns name, budget and channel." for i in range(12))
    asks = ["Top 3 campaigns by budget", "Which travel campaigns are there?", "Rank campaigns"]
    conversations = [[{"role": "system", "content": schema}, {"role": "user", "content": q}] for q in asks]
    shared = HFGenerator(model, tok, max_new_tokens=6, batch_size=3)(conversations)
    plain = HFGenerator(model, tok, max_new_tokens=6, batch_size=3, share_prefix=False)(conversations)
    # Two blockwise softmaxes per layer for each of the 5 steps after the prefill.
    assert len(split_calls) == 2 * model.config.num_hidden_layers * 5
    for a, b in zip(shared, plain):
        assert a.completion_ids == b.completion_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    assert model.config._attn_implementation == "sdpa"


def test_a_half_precision_model_gets_its_dtype_back_and_float32_sums():
    query, key, value = batch(1, 6)
    mask = padded_mask(1, 6, pads=[0, 2, 5])
    got = split(query.bfloat16(), key.bfloat16(), value.bfloat16(), mask)
    expected = sdpa(query.bfloat16().float(), key.bfloat16().float(), value.bfloat16().float(), mask)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), expected, atol=1e-2, rtol=1e-2)


def test_a_llama_model_with_three_query_heads_per_key_head_decodes_the_same(tiny_model, monkeypatch):
    # The `pretrained` profile's SmolLM2 is a Llama: grouped-query attention, 3 heads per key head.
    from transformers import LlamaConfig, LlamaForCausalLM

    _, tok = tiny_model
    tok = copy.deepcopy(tok)
    tok.eos_token = "<|im_start|>"
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=48, num_attention_heads=6,
                                         num_key_value_heads=2, num_hidden_layers=2, intermediate_size=64,
                                         max_position_embeddings=512, attn_implementation="sdpa")).eval()
    monkeypatch.setattr(prefix_attention, "MIN_PREFIX_ONCE", 64)
    split_calls = []
    real = prefix_attention._blockwise
    monkeypatch.setattr(prefix_attention, "_blockwise", lambda *a: split_calls.append(1) or real(*a))
    schema = " ".join(f"Table campaign{i} has columns name, budget and channel." for i in range(12))
    asks = ["Top 3 campaigns by budget", "Which travel campaigns are there?"]
    conversations = [[{"role": "system", "content": schema}, {"role": "user", "content": q}] for q in asks]
    shared = HFGenerator(llama, tok, max_new_tokens=5, batch_size=2)(conversations)
    plain = HFGenerator(llama, tok, max_new_tokens=5, batch_size=2, share_prefix=False)(conversations)
    assert len(split_calls) == 2 * 2 * 4
    for a, b in zip(shared, plain):
        assert a.completion_ids == b.completion_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
