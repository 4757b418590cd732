"""GRPO with a LoRA adapter and `track tensorboard`: what a `lora` grpo stage trains and logs."""

import json
from pathlib import Path

import pytest

from runtime.tracking import read_scalars
from runtime.train.grpo import train_grpo
from tests.grpo.test_grpo import TRL, WEIGHTS, tiny_job

# What `craftc compile` writes for `lora { r 4  alpha 8  dropout 0  targets q_proj, v_proj }`.
PEFT = {"r": 4, "lora_alpha": 8.0, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"],
        "target_parameters": [], "bias": "none", "task_type": "CAUSAL_LM"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, warehouse, tiny_model):
    job = tiny_job(tmp_path_factory.mktemp("grpo_lora"), warehouse, tiny_model,
                   trl={**TRL, "max_steps": 2, "report_to": "tensorboard", "run_name": "t-grpo-0"}, peft=PEFT)
    return job, train_grpo(job)


def test_a_lora_stage_trains_the_adapter_only_and_saves_it_merged(trained):
    job, summary = trained
    out = Path(job.out_dir)
    assert summary["adapter"] == "lora"
    assert 0 < summary["trainable_parameters"] < summary["total_parameters"] / 10
    assert {p.name for p in (out / "adapter").iterdir()} >= {"adapter_config.json", "adapter_model.safetensors"}
    [checkpoint] = (out / "checkpoints").glob("checkpoint-*")
    assert (checkpoint / "adapter_model.safetensors").is_file() and not (checkpoint / "model.safetensors").exists()
    from transformers import AutoModelForCausalLM

    merged = AutoModelForCausalLM.from_pretrained(out / "final")       # an ordinary model dir, no PEFT needed
    assert not any("lora" in name for name, _ in merged.named_parameters())


def test_tensorboard_holds_each_logged_reward_component(trained):
    job, _ = trained
    scalars = read_scalars(Path(job.out_dir) / "tracking")
    logged = [json.loads(line) for line in open(f"{job.out_dir}/metrics.jsonl") if "reward" in line]
    for component in WEIGHTS:
        values = [v for _, v in scalars[f"train/rewards/{component}/mean"]]
        assert values == pytest.approx([e[f"rewards/{component}/mean"] for e in logged if "reward" in e])
    assert [s for s, _ in scalars["train/reward"]] == [1, 2]
