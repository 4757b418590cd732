"""`lora { ... }` becomes peft_config.json that PEFT accepts; `track` becomes TRL's report_to."""

from __future__ import annotations

import json

import pytest

from craftc.emit.plan import render_plan_files
from craftc.emit.stages import peft_config_json, trl_config
from craftc.ir import LoraAdapter, ModelSpec
from runtime.tracking import TrackingError, log_step_metrics, read_scalars, require_tracker


def _with_lora(recipe, base="tiny_moe", **lora):
    sft = recipe.stages[0].model_copy(update={"lora": LoraAdapter(**lora), "base": base})
    models = recipe.models if base == "tiny_moe" else (*recipe.models, ModelSpec(name=base, source="hub", path=base))
    return recipe.model_copy(update={"stages": (sft, *recipe.stages[1:]), "models": models})


def test_tiny_moe_expert_targets_become_target_parameters_that_peft_accepts(recipe):
    from peft import LoraConfig

    lora = _with_lora(recipe, r=4, dropout=0.0, targets=("q_proj", "gate_up_proj", "down_proj"))
    kwargs = json.loads(peft_config_json(lora, lora.stages[0]))
    assert kwargs["target_modules"] == ["q_proj"]
    assert kwargs["target_parameters"] == ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    assert LoraConfig(**kwargs).r == 4


def test_a_hub_models_targets_go_to_target_modules_as_written(recipe):
    lora = _with_lora(recipe, base="org/m", targets=("q_proj", "down_proj"))
    kwargs = json.loads(peft_config_json(lora, lora.stages[0]))
    assert kwargs["target_modules"] == ["q_proj", "down_proj"] and kwargs["target_parameters"] == []


def test_only_a_lora_stage_has_a_peft_config_in_the_plan(recipe, solutions):
    files = render_plan_files(_with_lora(recipe, dropout=0.0), solutions)
    assert "stages/sft/peft_config.json" in files and "stages/grpo/peft_config.json" not in files


def test_tiny_moe_module_table_matches_the_real_model(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from craftc.adapters import TINY_MOE_EXPERT_PARAMS, TINY_MOE_LINEAR
    from runtime.train.tiny_moe import build_tiny_moe

    built = build_tiny_moe(tmp_path / "m", ["SELECT 1 FROM campaign", "<PLAN>count</PLAN>"] * 20,
                           {"hidden": 64, "layers": 1, "vocab": 300})
    model = AutoModelForCausalLM.from_pretrained(built)
    linear = {n.rsplit(".", 1)[-1] for n, m in model.model.layers.named_modules() if isinstance(m, torch.nn.Linear)}
    experts = {n.rsplit(".", 1)[-1] for n, p in model.model.layers.named_parameters() if p.dim() == 3}
    assert linear == set(TINY_MOE_LINEAR) and experts == set(TINY_MOE_EXPERT_PARAMS)


def test_track_is_report_to_and_the_run_name_is_left_to_the_step(recipe):
    kwargs = trl_config(recipe.model_copy(update={"track": "none"}), recipe.stages[0])
    assert kwargs["report_to"] == "none"
    assert trl_config(recipe, recipe.stages[0])["report_to"] == "tensorboard"
    # A run name from a hash in trl_config.json would retrain the stage after any recipe edit.
    assert "run_name" not in kwargs


def test_step_metrics_round_trip_through_tensorboard(tmp_path):
    logged = log_step_metrics("tensorboard", tmp_path, "r", "r-gate",
                              {"accepted": 98, "funnel": {"execution": 30}, "teacher": "synthetic"})
    assert logged == {"accepted": 98.0, "funnel/execution": 30.0}
    assert read_scalars(tmp_path / "tracking") == {"accepted": [(0, 98.0)], "funnel/execution": [(0, 30.0)]}


def test_a_tracker_that_is_not_installed_is_named_with_the_fix(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TrackingError, match="`pip install mlflow`, or set `track none`"):
        require_tracker("mlflow")
    require_tracker("none")
