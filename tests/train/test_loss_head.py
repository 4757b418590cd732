"""On CPU, SFT's LM head projects only the trained positions, and computes what TRL's does.

TRL's fused head (`add_fused_lm_head`) projects every position on a device without
Triton; `score_trained_positions` drops the masked ones first. Both must give the same
loss, per-token log-probabilities, metrics, load-balancing loss and gradients.
"""

from __future__ import annotations

import inspect
import types

import pytest

from runtime.train import loss_head
from runtime.train.loss_head import score_trained_positions


def _count_trl_calls(model) -> list:
    """Wrap TRL's head so that a call to it is counted: craft's head must not fall back to it."""
    calls, trl_forward = [], model.forward

    def counted(self, *args, **kwargs):
        calls.append(kwargs.get("fused_lm_head", False))
        return trl_forward(*args, **kwargs)

    model.forward = types.MethodType(counted, model)
    return calls


def _model(tiny_model_dir, temperature: float = 1.0):
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True)
    model.train()
    # As SFTTrainer does (GRPOTrainer: at its sampling temperature)
    add_fused_lm_head(model, temperature=temperature, outputs=("log_probs", "entropy", "is_top1"))
    return model


def _batch(vocab: int):
    import torch

    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, vocab, (2, 48), generator=generator)
    labels = input_ids.clone()
    labels[:, :30] = -100          # a prompt, not trained
    labels[1, 40:44] = -100        # a tool output inside the reply, not trained
    return input_ids, labels


def _scored(model, input_ids, labels):
    outputs = model(input_ids=input_ids, labels=labels, fused_lm_head=True, output_router_logits=True)
    # An entropy bonus too (GRPO can have one), so that its gradient is compared as well.
    loss = -outputs.log_probs.sum() / outputs.label_mask.sum() + 0.001 * outputs.aux_loss - 0.01 * outputs.entropy.sum()
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    return outputs, grads


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_trained_positions_give_trls_loss_metrics_and_gradients(tiny_model_dir, temperature):
    import torch

    trl_head = _model(tiny_model_dir, temperature)
    craft_head = _model(tiny_model_dir, temperature)
    trl_calls = _count_trl_calls(craft_head)
    assert score_trained_positions(craft_head, temperature) is True
    input_ids, labels = _batch(trl_head.config.vocab_size)

    expected, expected_grads = _scored(trl_head, input_ids, labels)
    got, got_grads = _scored(craft_head, input_ids, labels)
    assert trl_calls == []     # craft's head computed it, not TRL's behind it

    assert torch.equal(got.label_mask, expected.label_mask)
    assert int(got.label_mask.sum()) == 2 * 18 - 4   # positions 30-47, less the tool output
    for field in ("log_probs", "entropy"):
        torch.testing.assert_close(getattr(got, field), getattr(expected, field), rtol=1e-5, atol=1e-5)
        assert bool((getattr(got, field)[~got.label_mask] == 0).all())   # zero where not trained
    assert torch.equal(got.is_top1.bool(), expected.is_top1.bool())
    torch.testing.assert_close(got.aux_loss, expected.aux_loss)
    assert got_grads.keys() == expected_grads.keys()
    assert "lm_head.weight" in got_grads
    for name, grad in expected_grads.items():
        torch.testing.assert_close(got_grads[name], grad, rtol=1e-4, atol=1e-6, msg=name)


def test_plain_forward_and_generation_are_untouched(tiny_model_dir):
    import torch

    trl_only, model = _model(tiny_model_dir), _model(tiny_model_dir)
    score_trained_positions(model)
    input_ids, _ = _batch(model.config.vocab_size)
    with torch.no_grad():
        assert torch.equal(model(input_ids=input_ids).logits, trl_only(input_ids=input_ids).logits)
    # `generate` reads the signature to decide whether to pass position ids.
    assert "position_ids" in inspect.signature(model.forward).parameters


def test_more_logits_than_the_limit_take_trls_tiled_head(tiny_model_dir, monkeypatch):
    import torch

    model = _model(tiny_model_dir)
    trl_calls = _count_trl_calls(model)
    score_trained_positions(model)
    input_ids, labels = _batch(model.config.vocab_size)
    monkeypatch.setattr(loss_head, "MAX_LOGITS", model.config.vocab_size)   # one trained token's worth
    with torch.no_grad():
        model(input_ids=input_ids, labels=labels, fused_lm_head=True)
    assert trl_calls == [True]


@pytest.mark.parametrize("attribute", ["final_logit_softcapping", "logit_scale"])
def test_a_model_that_scales_its_logits_keeps_trls_head(tiny_model_dir, attribute):
    model = _model(tiny_model_dir)
    trl_forward = model.forward
    setattr(model.config, attribute, 30.0)
    assert score_trained_positions(model) is False
    assert model.forward == trl_forward


def test_a_second_trainer_on_the_same_model_still_trains_under_bf16_autocast(tiny_model_dir, tmp_path):
    # SFT after `schema_docs` (or the THINK warm-up) builds a second trainer on the model the
    # first trained. accelerate wraps `forward` in autocast only when it first prepares a
    # model, so without the trainer's autocast in the head the second phase ran in float32.
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from runtime.train.loss_head import score_trained_positions_in

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True)
    input_ids, labels = _batch(model.config.vocab_size)
    data = Dataset.from_dict({"input_ids": input_ids.tolist(), "labels": labels.tolist()})
    seen = []
    model.model.layers[0].self_attn.q_proj.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    for phase in ("first", "second"):
        args = SFTConfig(output_dir=str(tmp_path / phase), bf16=True, use_cpu=True, max_steps=1,
                         per_device_train_batch_size=2, report_to=[], save_strategy="no", disable_tqdm=True)
        trainer = SFTTrainer(model=model, args=args, processing_class=tokenizer, train_dataset=data)
        assert score_trained_positions_in(trainer) is True
        seen.clear()
        trainer.train()
        assert seen and set(seen) == {torch.bfloat16}, phase
    assert next(model.parameters()).dtype == torch.float32      # master weights stay float32
