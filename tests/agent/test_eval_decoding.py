"""Eval's generator (no log-probs kept) decodes the tokens plain greedy ``model.generate`` decodes."""

import copy

import pytest
import torch

from runtime.agent import HFGenerator
from runtime.agent.generate import chosen_logprobs
from runtime.agent.shared_prefix import MIN_SHARED_PREFIX, prefix_cache

ASKS = ("Top 3 campaigns by budget", "Rank campaigns", "Keep travel campaigns and rank them by budget")
# Long enough that the batch's prompts share more than MIN_SHARED_PREFIX tokens (read once, kept).
SYSTEM = "You rank campaigns by budget and keep travel campaigns. " * 12


def plain_greedy(model, tok, prompts: list[list[int]], new_tokens: int) -> list[list[int]]:
    """Left-padded prompts through ``model.generate``, greedy, with transformers' own cache."""
    width = max(len(p) for p in prompts)
    input_ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompts])
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=new_tokens,
                             do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                             output_router_logits=False)
    return out[:, width:].tolist()


def tiny_llama(vocab: int, pad_id: int):
    """A small random Llama (SmolLM2's architecture: grouped KV heads, tied embeddings), no download."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, pad_token_id=pad_id)
    return LlamaForCausalLM(config).eval()


@pytest.fixture(params=["tiny_moe", "llama"])
def model_and_tok(request, tiny_model):
    model, tok = tiny_model
    tok = copy.deepcopy(tok)
    tok.eos_token = "<|im_start|>"          # never written by an untrained model: every row decodes all tokens
    if request.param == "llama":
        model = tiny_llama(len(tok), tok.pad_token_id)
    return model, tok


def test_eval_generator_writes_the_tokens_of_plain_greedy_generate(model_and_tok):
    model, tok = model_and_tok
    asks = [[{"role": "user", "content": q}] for q in ASKS]
    ours = HFGenerator(model, tok, max_new_tokens=12, batch_size=3, frozen=True, logprobs=False)(asks)
    assert all(len(g.completion_ids) == 12 and g.logprobs == [] for g in ours)
    assert [g.completion_ids for g in ours] == plain_greedy(model, tok, [g.prompt_ids for g in ours], 12)


def test_a_call_that_stops_at_max_new_tokens_is_marked_cut_off(model_and_tok):
    model, tok = model_and_tok
    asks = [[{"role": "user", "content": q}] for q in ASKS]
    # The fixture's end-of-turn token is never written: every row runs to the limit.
    assert all(g.cut_off for g in HFGenerator(model, tok, max_new_tokens=6, batch_size=3, logprobs=False)(asks))
    # A row that writes it before the limit ended by itself.
    first = HFGenerator(model, tok, max_new_tokens=6, batch_size=3, logprobs=False)(asks)[0]
    tok = copy.deepcopy(tok)
    tok.eos_token = tok.convert_ids_to_tokens(first.completion_ids[0])
    ended = HFGenerator(model, tok, max_new_tokens=6, batch_size=3, logprobs=False)(asks)[0]
    assert ended.completion_ids == first.completion_ids[:1] and not ended.cut_off


def test_leaving_out_log_probs_changes_no_token_with_a_kept_shared_prefix(model_and_tok):
    model, tok = model_and_tok
    asks = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}] for q in ASKS]
    with_scores = HFGenerator(model, tok, max_new_tokens=12, batch_size=3, frozen=True)
    without = HFGenerator(model, tok, max_new_tokens=12, batch_size=3, frozen=True, logprobs=False)
    a, b = with_scores(asks), without(asks)
    assert with_scores._kept is not None and len(with_scores._kept[0]) >= MIN_SHARED_PREFIX   # the prefix path ran
    assert [g.completion_ids for g in a] == [g.completion_ids for g in b]
    assert all(len(g.logprobs) == 12 for g in a) and all(g.logprobs == [] for g in b)


def test_chosen_log_probs_are_those_of_the_whole_stack_bit_for_bit():
    gen = torch.Generator().manual_seed(0)
    scores = tuple(torch.randn(3, 500, generator=gen) * 4 for _ in range(7))
    tokens = torch.randint(0, 500, (3, 7), generator=gen)
    whole = torch.stack(scores, dim=1).float().log_softmax(-1)
    expected = torch.stack([whole[row, torch.arange(7), tokens[row]] for row in range(3)])
    assert torch.equal(chosen_logprobs(scores, tokens), expected)


def test_the_prefix_cache_is_the_same_without_the_prefix_tokens_logits(model_and_tok):
    model, tok = model_and_tok
    ids = list(range(5, 5 + MIN_SHARED_PREFIX))
    cache = prefix_cache(model, ids)
    with torch.no_grad():
        full = model(input_ids=torch.tensor([ids]), use_cache=True, output_router_logits=False)
    reference = getattr(full, "cache", None) or full.past_key_values
    for ours, theirs in zip(cache.layers, reference.layers):
        assert torch.equal(ours.keys, theirs.keys) and torch.equal(ours.values, theirs.values)
