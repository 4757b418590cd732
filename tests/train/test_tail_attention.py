"""A long prompt's last layer attends only from the first trained position, and trains as sdpa does.

The loss reads the last layer only where the next token is trained, so the queries
before that position are skipped there (runtime.train.tail_attention). The loss, the
per-token log-probabilities and every gradient must be what TRL's head computes with
plain sdpa; the switch must stay off wherever a skipped position would be read.
"""

from __future__ import annotations

import pytest

from runtime.train import tail_attention
from runtime.train.loss_head import score_trained_positions

from test_loss_head import _model

LENGTH, PROMPT = 48, 30


@pytest.fixture
def query_lengths(monkeypatch):
    """Every query length the attention computed, layer by layer; the switch from a 16-token prompt on."""
    lengths, sdpa = [], tail_attention.sdpa_attention_forward

    def counted(module, query, *args, **kwargs):
        lengths.append((module.layer_idx, query.shape[2]))
        return sdpa(module, query, *args, **kwargs)

    monkeypatch.setattr(tail_attention, "sdpa_attention_forward", counted)
    monkeypatch.setattr(tail_attention, "MIN_TAIL_START", 16)
    return lengths


def _batch(vocab: int, pad_row_1: int = 0):
    import torch

    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(3, vocab, (2, LENGTH), generator=generator)
    labels = input_ids.clone()
    labels[:, :PROMPT] = -100                  # a prompt, not trained: the first position read is PROMPT - 1
    labels[1, 40:44] = -100                    # a tool output inside the reply
    attention_mask = torch.ones_like(input_ids)
    if pad_row_1:                              # row 1 shorter, right-padded as TRL's collator pads
        attention_mask[1, -pad_row_1:] = 0
        labels[1, -pad_row_1:] = -100
    return input_ids, labels, attention_mask


def _scored(model, input_ids, labels, attention_mask, **kwargs):
    outputs = model(input_ids=input_ids, labels=labels, attention_mask=attention_mask, fused_lm_head=True, **kwargs)
    (-outputs.log_probs.sum() / outputs.label_mask.sum()).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    return outputs, grads


@pytest.mark.parametrize("pad_row_1", [0, 5])
def test_the_last_layer_computes_the_tail_and_trains_as_sdpa(tiny_model_dir, query_lengths, pad_row_1):
    import torch

    trl_head, craft_head = _model(tiny_model_dir), _model(tiny_model_dir)
    assert score_trained_positions(craft_head) is True
    batch = _batch(trl_head.config.vocab_size, pad_row_1)
    expected, expected_grads = _scored(trl_head, *batch)
    query_lengths.clear()
    got, got_grads = _scored(craft_head, *batch)

    last = craft_head.config.num_hidden_layers - 1
    assert dict(query_lengths) == {**{layer: LENGTH for layer in range(last)}, last: LENGTH - (PROMPT - 1)}
    torch.testing.assert_close(got.log_probs, expected.log_probs, rtol=1e-5, atol=1e-5)
    assert got_grads.keys() == expected_grads.keys()
    for name, grad in expected_grads.items():
        torch.testing.assert_close(got_grads[name], grad, rtol=1e-4, atol=1e-6, msg=name)
    assert craft_head.config._attn_implementation == "sdpa"     # switched back after the forward


# Where the switch stays off, the model attends through transformers' own sdpa, never
# through craft's function: `query_lengths` records nothing.

def test_router_logits_in_the_loss_or_a_short_prompt_keep_sdpa(tiny_model_dir, query_lengths, monkeypatch):
    model = _model(tiny_model_dir)
    score_trained_positions(model)
    batch = _batch(model.config.vocab_size)
    _scored(model, *batch)
    assert query_lengths                       # the switch is on for this batch ...
    query_lengths.clear()
    # ... but the load-balancing loss averages the router over every position: none may be skipped.
    outputs, _ = _scored(model, *batch, output_router_logits=True)
    assert outputs.aux_loss is not None and query_lengths == []
    monkeypatch.setattr(tail_attention, "MIN_TAIL_START", PROMPT)     # the first trained position is below it
    _scored(model, *batch)
    assert query_lengths == []


def test_activation_checkpointing_keeps_sdpa(tiny_model_dir, query_lengths):
    # The backward pass recomputes the layer outside the switch, so the switch stays off.
    model = _model(tiny_model_dir)
    model.activation_checkpointing_enable()
    score_trained_positions(model)
    outputs, grads = _scored(model, *_batch(model.config.vocab_size))
    assert grads and query_lengths == []
