"""`stage grpo { shared_prefix on }`: each group's prompt runs once, with the plain forwards' numbers.

On TRL's own ``GRPOTrainer`` (its ``_get_per_token_logps_and_entropies`` and ``_compute_loss``),
float32, the packed forwards of runtime.train.grpo.prompt_groups give the plain per-row
forwards' per-token log-probs and entropies within 1e-5, and the GRPO loss's gradient of every
parameter within 1e-5: on tiny_moe (with its MoE load-balancing loss) and on a Llama-architecture
model with grouped-query attention, through craft's CPU head and through TRL's own fused head.
The batches hold two groups whose prompts differ in length (so one is left-padded), right-padded
completions, a completion TRL masked whole, a row whose prompt no other row shares, multi-turn
completions with tool tokens masked from the loss, and a reference model (``beta > 0``).
Last, the setting reaches the trainer from a compiled smoke plan.
"""

from __future__ import annotations

import copy
import json
import math
import random

import pytest
import torch

from runtime.train.grpo import prompt_groups
from runtime.train.grpo.prompt_groups import pack_rows, score_group_prompts_once
from runtime.train.prefix_groups import SHARED_PREFIX
from tests.train.train_support import ROOT, SYSTEM, TINY_SPEC, corpus_of, make_conversations

TOLERANCE = 1e-5
GROUP = 4


@pytest.fixture(scope="module")
def tiny_moe_dir(tmp_path_factory):
    from runtime.train.tiny_moe import build_tiny_moe

    return build_tiny_moe(tmp_path_factory.mktemp("grpo_prefix") / "tiny_moe", corpus_of(make_conversations()),
                          TINY_SPEC)


@pytest.fixture(scope="module")
def tokenizer(tiny_moe_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_moe_dir)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory, tokenizer):
    """A randomly initialised Llama-architecture model (as SmolLM2: 3 query heads per key head), saved
    so that TRL can load its reference model from the same path."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
                         num_hidden_layers=2, intermediate_size=96, max_position_embeddings=1024,
                         pad_token_id=tokenizer.pad_token_id, attn_implementation="sdpa")
    path = tmp_path_factory.mktemp("grpo_prefix") / "llama"
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def make_trainer(model_dir, tokenizer, tmp_path, beta: float = 0.0, craft_head: bool = True):
    """TRL's GRPOTrainer on ``model_dir`` (float32, CPU), its LM head as train_grpo gives it."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from runtime.train.loss_head import score_trained_positions_in

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if hasattr(model.config, "router_aux_loss_coef"):
        model.config.router_aux_loss_coef = 0.01     # the load-balancing loss must count each token as plain does
    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none",
                      num_generations=GROUP, per_device_train_batch_size=2 * GROUP, beta=beta,
                      max_completion_length=64, temperature=0.7, logging_steps=1, disable_tqdm=True,
                      activation_checkpointing=False)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args,
                          reward_funcs=lambda completions, **_: [0.0] * len(completions),
                          train_dataset=Dataset.from_list([{"prompt": "Top campaigns?"}] * 2 * GROUP))
    if craft_head:
        assert score_trained_positions_in(trainer, trainer.temperature)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    return trainer


def prompt_ids(tokenizer, question: str) -> list[int]:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=False))


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def rollout(tokenizer, seed: int, multi_turn: bool) -> tuple[list[int], list[int]]:
    """(completion ids, tool mask): one assistant turn, or a turn, its tool output (masked) and a repair."""
    rng = random.Random(seed)
    k = rng.randint(2, 9)
    turn = encode(tokenizer, f"<THINK>Rank {k} campaigns by ctr.</THINK><PLAN>Filter, sort, keep {k}.</PLAN>"
                             f"<CODE>result = api.query('top {k}' * {rng.randint(1, 4)})</CODE><|im_end|>")
    if not multi_turn:
        return turn, [1] * len(turn)
    tool = encode(tokenizer, f"\n<|im_start|>tool\ncampaign_id ctr\n{1000 + k} 0.0{k}\n[{k} rows]<|im_end|>\n"
                             "<|im_start|>assistant\n")
    answer = encode(tokenizer, f"<ANSWER>The top {k} campaigns are listed above.</ANSWER><|im_end|>")
    return turn + tool + answer, [1] * len(turn) + [0] * len(tool) + [1] * len(answer)


def grpo_batch(tokenizer, prompts: list[list[int]], multi_turn: bool = False, masked_row: int | None = None) -> dict:
    """TRL's batch of ``prompts`` (one per row) and seeded rollouts: left-padded prompts, right-padded
    completions, a tool mask, advantages; ``masked_row``'s completion masked whole (a truncated one)."""
    from trl.trainer.utils import pad

    completions = [rollout(tokenizer, seed, multi_turn) for seed in range(len(prompts))]
    pad_id = tokenizer.pad_token_id
    as_tensors = lambda rows: [torch.tensor(r) for r in rows]     # noqa: E731
    completion_mask = pad(as_tensors([[1] * len(c) for c, _ in completions]), padding_value=0, padding_side="right")
    if masked_row is not None:
        completion_mask[masked_row] = 0
    batch = {"prompt_ids": pad(as_tensors(prompts), padding_value=pad_id, padding_side="left"),
             "prompt_mask": pad(as_tensors([[1] * len(p) for p in prompts]), padding_value=0, padding_side="left"),
             "completion_ids": pad(as_tensors([c for c, _ in completions]), padding_value=pad_id, padding_side="right"),
             "completion_mask": completion_mask,
             "advantages": torch.tensor([(-1.0) ** r * (0.25 + r / 10) for r in range(len(prompts))])}
    if multi_turn:
        batch["tool_mask"] = pad(as_tensors([m for _, m in completions]), padding_value=1, padding_side="right")
    mask = batch["completion_mask"] * batch.get("tool_mask", 1)
    batch["num_items_in_batch"] = mask.sum()
    return batch


def forward_inputs(batch: dict) -> tuple:
    return (torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1),
            torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1), batch["completion_ids"].size(1))


def scores(trainer, model, batch: dict, batch_size: int | None = None):
    """Per-token log-probs, entropies and aux loss of ``model`` (no gradient), as TRL's forwards compute them
    (the reference's head computes log-probs only)."""
    ids, mask, keep = forward_inputs(batch)
    policy = model is trainer.model
    with torch.no_grad():
        return trainer._get_per_token_logps_and_entropies(model, ids, mask, keep, batch_size=batch_size,
                                                          compute_entropy=policy,
                                                          compute_aux_loss=policy and trainer.aux_loss_enabled)


def loss_and_grads(trainer, batch: dict):
    trainer.model.zero_grad()
    loss = trainer._compute_loss(trainer.model, batch)
    loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in trainer.model.named_parameters() if p.grad is not None}
    trainer.model.zero_grad()
    return float(loss.detach()), grads


def assert_close(got, expected, what: str):
    torch.testing.assert_close(got, expected, rtol=TOLERANCE, atol=TOLERANCE, msg=what)


def assert_shared_equals_plain(trainer, batch: dict, packed_forwards: int = 1, batch_size: int | None = None):
    """Plain forwards first, then the trainer patched: log-probs, entropies, (with ``beta``) the
    reference's log-probs, and the loss and every gradient, equal; and how many forwards were packed."""
    batch = dict(batch)
    plain = scores(trainer, trainer.model, batch, batch_size)
    plain_ref = scores(trainer, trainer.ref_model, batch, batch_size)[0] if trainer.beta else None
    if trainer.beta:
        batch["ref_per_token_logps"] = plain_ref
    plain_loss, plain_grads = loss_and_grads(trainer, batch)

    score_group_prompts_once(trainer)
    packed = []
    real = prompt_groups.packed_logps
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prompt_groups, "packed_logps", lambda *a, **k: packed.append(a[2].layout) or real(*a, **k))
        shared = scores(trainer, trainer.model, batch, batch_size)
        if trainer.beta:
            shared_ref = scores(trainer, trainer.ref_model, batch, batch_size)[0]
            assert_close(shared_ref, plain_ref, "reference log-probs")
            batch["ref_per_token_logps"] = shared_ref
        shared_loss, shared_grads = loss_and_grads(trainer, batch)
    # scores (each chunk), the reference's scores, and the loss's forward
    assert len(packed) == packed_forwards * (2 + bool(trainer.beta))
    assert_close(shared[0], plain[0], "per-token log-probs")
    assert_close(shared[1], plain[1], "per-token entropies")
    if trainer.aux_loss_enabled:
        assert_close(shared[2], plain[2], "MoE load-balancing loss")
    assert math.isclose(shared_loss, plain_loss, rel_tol=TOLERANCE, abs_tol=TOLERANCE), (shared_loss, plain_loss)
    assert shared_grads.keys() == plain_grads.keys() and len(plain_grads) == len(list(trainer.model.parameters()))
    for name in plain_grads:
        assert_close(shared_grads[name], plain_grads[name], name)
    # Scored completion tokens are the attended ones; everything else is zero, as TRL returns it.
    attended = batch["completion_mask"].bool()
    assert bool((shared[0][~attended] == 0).all()) and bool((shared[0][attended] != 0).all())
    return packed


def two_groups(tokenizer) -> list[list[int]]:
    """Two groups of GROUP rows: a long prompt and a short one (left-padded to the long one's width)."""
    long = prompt_ids(tokenizer, "Which 5 campaigns of Acme Travel had the best CTR in the last 30 days, by week?")
    short = prompt_ids(tokenizer, "Top 3 by spend?")
    assert len(long) > len(short) + 8
    return [long] * GROUP + [short] * GROUP


@pytest.mark.parametrize("craft_head", [True, False], ids=["craft_cpu_head", "trl_fused_head"])
def test_tiny_moe_two_groups_padded_prompts_give_the_plain_logps_and_gradients(tiny_moe_dir, tokenizer, tmp_path,
                                                                               craft_head):
    trainer = make_trainer(tiny_moe_dir, tokenizer, tmp_path, craft_head=craft_head)
    assert trainer.aux_loss_enabled
    batch = grpo_batch(tokenizer, two_groups(tokenizer), masked_row=2)
    (layout,) = assert_shared_equals_plain(trainer, batch)[:1]
    assert [(len(g.rows), g.prefix) for g in layout.groups] == [
        (GROUP, int(batch["prompt_mask"][0].sum()) - 1), (GROUP, int(batch["prompt_mask"][-1].sum()) - 1)]
    # Each prompt but its last token once, then each row's last prompt token and attended completion tokens.
    assert layout.length == (sum(g.prefix for g in layout.groups) + 2 * GROUP
                             + int(batch["completion_mask"].sum()))
    assert trainer.model.config._attn_implementation == SHARED_PREFIX


def test_tiny_moe_multi_turn_completions_with_masked_tool_tokens_and_recomputed_layers(tiny_moe_dir, tokenizer,
                                                                                       tmp_path):
    trainer = make_trainer(tiny_moe_dir, tokenizer, tmp_path)
    # As on GPUs (`checkpointing auto`): the backward pass recomputes each layer, where the packed
    # layout must reach the attention again.
    trainer.model.activation_checkpointing_enable()
    assert trainer.model.is_activation_checkpointing
    batch = grpo_batch(tokenizer, two_groups(tokenizer), multi_turn=True)
    assert 0 < int((batch["tool_mask"] == 0).sum()) and int(batch["completion_mask"].sum()) > batch[
        "num_items_in_batch"]
    assert_shared_equals_plain(trainer, batch)


def test_tiny_moe_reference_model_with_beta(tiny_moe_dir, tokenizer, tmp_path):
    trainer = make_trainer(tiny_moe_dir, tokenizer, tmp_path, beta=0.1)
    assert trainer.ref_model is not None
    # The reference differs from the policy, so a KL term with the wrong reference would show.
    with torch.no_grad():
        for p in trainer.ref_model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    assert_shared_equals_plain(trainer, grpo_batch(tokenizer, two_groups(tokenizer), multi_turn=True))
    assert trainer.ref_model.config._attn_implementation == SHARED_PREFIX


def test_tiny_moe_a_lone_row_and_chunks_of_the_old_policy_forward(tiny_moe_dir, tokenizer, tmp_path):
    # TRL runs the old policy's and the reference's forwards in chunks of per_device_train_batch_size;
    # here chunks of 5 rows: [A A A A lone] and [B B B B], each packed on its own.
    trainer = make_trainer(tiny_moe_dir, tokenizer, tmp_path)
    prompts = two_groups(tokenizer)
    prompts.insert(GROUP, prompt_ids(tokenizer, "How many advertisers are there?"))
    batch = grpo_batch(tokenizer, prompts)
    plain = scores(trainer, trainer.model, batch, batch_size=5)
    score_group_prompts_once(trainer)
    shared = scores(trainer, trainer.model, batch, batch_size=5)
    assert_close(shared[0], plain[0], "per-token log-probs")
    assert_close(shared[1], plain[1], "per-token entropies")
    assert_close(shared[2], plain[2], "MoE load-balancing loss")
    ids, mask, keep = forward_inputs(batch)
    first = pack_rows(ids[:5], mask[:5], keep)
    assert sorted((len(g.rows), g.prefix > 0) for g in first.layout.groups) == [(1, False), (GROUP, True)]


def test_llama_two_groups_multi_turn_and_reference(llama_dir, tokenizer, tmp_path):
    trainer = make_trainer(llama_dir, tokenizer, tmp_path, beta=0.1)
    assert type(trainer.model).__name__ == "LlamaForCausalLM" and not trainer.aux_loss_enabled
    with torch.no_grad():
        for p in trainer.ref_model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    assert_shared_equals_plain(trainer, grpo_batch(tokenizer, two_groups(tokenizer), multi_turn=True, masked_row=5))


def test_llama_two_groups_through_trls_fused_head(llama_dir, tokenizer, tmp_path):
    trainer = make_trainer(llama_dir, tokenizer, tmp_path, craft_head=False)
    assert_shared_equals_plain(trainer, grpo_batch(tokenizer, two_groups(tokenizer)))


def test_a_batch_where_no_two_rows_share_a_prompt_goes_through_trls_forward_unchanged(tiny_moe_dir, tokenizer,
                                                                                       tmp_path):
    trainer = make_trainer(tiny_moe_dir, tokenizer, tmp_path)
    prompts = [prompt_ids(tokenizer, f"Top {n} campaigns by spend?") for n in range(3, 7)]
    batch = grpo_batch(tokenizer, prompts)
    ids, mask, keep = forward_inputs(batch)
    assert pack_rows(ids, mask, keep) is None
    plain = scores(trainer, trainer.model, batch)
    score_group_prompts_once(trainer)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prompt_groups, "packed_logps", lambda *a, **k: pytest.fail("a batch sharing nothing was packed"))
        shared = scores(trainer, trainer.model, batch)
    for got, expected in zip(shared, plain):
        assert torch.equal(got, expected)


def test_pack_rows_leaves_a_mask_of_another_shape_to_trl():
    ids = torch.tensor([[5, 6, 7, 1, 2], [5, 6, 7, 3, 4]])
    assert pack_rows(ids, torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 1]]), 2) is None     # a hole in a completion
    assert pack_rows(ids, torch.tensor([[1, 0, 1, 1, 1], [1, 1, 1, 1, 1]]), 2) is None     # a hole in a prompt
    assert pack_rows(ids, torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]), 2) is not None


def test_train_grpo_with_shared_prefix_on_packs_every_loss_forward(tmp_path, warehouse, tiny_model):
    # The whole run (rollouts in the sandbox, TRL's loop, measurements with the patched model):
    # each step's loss forward is one packed row through craft's CPU head.
    from runtime.train.grpo import train_grpo
    from tests.grpo.test_grpo import STAGE, TRL, tiny_job
    from tests.train.train_support import craft_head_calls

    job = tiny_job(tmp_path, warehouse, tiny_model, stage={**STAGE, "measure": 1, "shared_prefix": "on"},
                   trl={**TRL, "max_steps": 2})
    packed = []
    real = prompt_groups.packed_logps
    with pytest.MonkeyPatch.context() as patch, craft_head_calls() as head_calls:
        patch.setattr(prompt_groups, "packed_logps", lambda *a, **k: packed.append(a[2].layout) or real(*a, **k))
        summary = train_grpo(job)
    assert summary["steps"] == 2 and head_calls == ["craft", "craft"]
    # each step: one group of 2 completions (per_device_train_batch_size 2), its prompt once
    assert [[len(g.rows) for g in layout.groups] for layout in packed] == [[2], [2]]
    assert all(layout.groups[0].prefix > 8 for layout in packed)


# ---------------------------------------------------------------- the setting, from the recipe to the trainer

def compiled_smoke_plan(tmp_path, grpo_extra: str):
    """The ads recipe's smoke profile, its grpo stage with ``grpo_extra``, compiled into a plan dir."""
    from craftc.emit.compile import compile_to_dir

    text = (ROOT / "recipes/ads_analytics.craft").read_text()
    smoke_grpo = "    stage grpo { steps 2  group 2  max_new_tokens 48  batch 2  per_device_batch 2"
    assert text.count(smoke_grpo) == 1
    text = text.replace(smoke_grpo, smoke_grpo + "  " + grpo_extra if grpo_extra else smoke_grpo)
    recipe = tmp_path / "ads.craft"
    recipe.write_text(text.replace('"../', f'"{ROOT}/'))
    compiled = compile_to_dir(recipe, tmp_path / "plan", profile="smoke")
    assert compiled.ok, compiled.load.render()
    return tmp_path / "plan"


def job_of(plan, tmp_path):
    from runtime.train.grpo.job import GRPOJob

    config = tmp_path / "grpo_config.json"
    config.write_text(json.dumps({"model_dir": "m", "instances": "i.json", "warehouse": "w.duckdb", "out_dir": "."}))
    return GRPOJob.from_plan(plan, "grpo", config)


def test_shared_prefix_on_reaches_the_trainer_from_a_compiled_smoke_plan(tmp_path, tiny_moe_dir, tokenizer):
    from runtime.train.grpo.trainer import prepare_scoring

    plan = compiled_smoke_plan(tmp_path, "shared_prefix on")
    stage = next(s for s in json.loads((plan / "plan.json").read_text())["recipe"]["stages"] if s["kind"] == "grpo")
    assert stage["shared_prefix"] == "on"
    job = job_of(plan, tmp_path)
    assert job.stage["shared_prefix"] == "on"
    trainer = make_trainer(tiny_moe_dir, tokenizer, tmp_path, craft_head=False)
    assert prepare_scoring(trainer, job) == {"cpu_head": True, "shared_prefix": True}
    assert "_get_per_token_logps_and_entropies" in vars(trainer)      # the instance's method, not the class's
    assert trainer.model.config._attn_implementation == SHARED_PREFIX


def test_the_default_plan_carries_no_shared_prefix_and_the_trainer_scores_as_before(tmp_path, tiny_moe_dir,
                                                                                     tokenizer):
    from runtime.train.grpo.trainer import prepare_scoring

    plan = compiled_smoke_plan(tmp_path, "")
    assert "shared_prefix" not in (plan / "plan.json").read_text()
    trainer = make_trainer(tiny_moe_dir, tokenizer, tmp_path, craft_head=False)
    assert prepare_scoring(trainer, job_of(plan, tmp_path)) == {"cpu_head": True, "shared_prefix": False}
    assert "_get_per_token_logps_and_entropies" not in vars(trainer)
    assert trainer.model.config._attn_implementation != SHARED_PREFIX


def test_a_replicates_grpo_job_trains_with_its_own_seed_and_data_seed(tmp_path):
    """`craftc run --replicates N` writes the replicate's seed into the step config: TRL gets it as
    `seed` and `data_seed` both, so another replicate draws its rows in another order too."""
    from runtime.train.grpo.job import GRPOJob

    plan = compiled_smoke_plan(tmp_path, "")
    assert job_of(plan, tmp_path).trl["data_seed"] == job_of(plan, tmp_path).trl["seed"] == job_of(plan, tmp_path).seed
    config = tmp_path / "replicate_config.json"
    config.write_text(json.dumps({"model_dir": "m", "instances": "i.json", "warehouse": "w.duckdb", "out_dir": ".",
                                  "seed": 4242}))
    job = GRPOJob.from_plan(plan, "grpo", config)
    assert (job.seed, job.trl["seed"], job.trl["data_seed"]) == (4242, 4242, 4242)
