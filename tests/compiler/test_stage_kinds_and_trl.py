"""Stages are sft or grpo with their own settings; `trl { ... }` passes keys through to TRL.

The passthrough block is checked against the installed TRL's config dataclasses,
read from their source (never imported), so a typo is a compile error at the key.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from compiler_support import FIXTURES
from craftc import trl_keys
from craftc.frontend import load_recipe
from craftc.ir import GRPOStage, Plan, SFTStage
from craftc.trl_keys import CRAFT_TO_TRL, TRL_KEY_SETTING, trl_config_keys


def _mini_with_sft(tmp_path, sft_settings: str):
    for name in ("mini_schema.craft", "solutions"):
        src = FIXTURES / name
        (tmp_path / name).symlink_to(src, target_is_directory=src.is_dir())
    old = "stage sft  { base small  epochs 2  lr 3e-4  batch 8  per_device_batch 4 }"
    source = (FIXTURES / "mini.craft").read_text()
    assert old in source
    text = source.replace(old, f"stage sft  {{ base small  epochs 2  lr 3e-4  batch 8  per_device_batch 4  {sft_settings} }}")
    (tmp_path / "r.craft").write_text(text)
    return load_recipe(tmp_path / "r.craft")


def test_sft_and_grpo_stages_are_different_models_and_only_grpo_has_generation_settings(tmp_path):
    result = _mini_with_sft(tmp_path, "")
    assert result.ok, result.render()
    sft, grpo = result.recipe.stages
    assert (type(sft), type(grpo)) == (SFTStage, GRPOStage)
    assert grpo.group == 4 and not hasattr(sft, "group")
    stages = json.loads(result.recipe.model_dump_json(by_alias=True))["stages"]
    assert "group" not in stages[0] and stages[1]["group"] == 4
    assert stages[0]["kind"] == "sft"           # the runtime still reads `kind` and `name`


def test_a_grpo_setting_on_an_sft_stage_is_an_error_at_the_key(tmp_path):
    result = _mini_with_sft(tmp_path, "temperature 0.5")
    [d] = [d for d in result.diagnostics if d.code == "E213"]
    assert d.message == "`temperature` is a grpo-only setting and `stage sft` is of kind sft"
    assert result.recipe is None


def test_trl_keys_are_sorted_and_typed_in_the_plan(tmp_path):
    result = _mini_with_sft(tmp_path, 'trl { save_total_limit 3  torch_compile true  '
                                      'lr_scheduler_type cosine  weight_decay 0.01  run_name "x" }')
    assert result.ok, result.render()
    assert result.recipe.stages[0].trl == (
        ("lr_scheduler_type", "cosine"), ("run_name", "x"), ("save_total_limit", 3),
        ("torch_compile", True), ("weight_decay", 0.01))
    plan = Plan(craftc_version="t", recipe=result.recipe)
    again = Plan.model_validate_json(plan.model_dump_json(by_alias=True))
    assert again.recipe.stages[0].trl == result.recipe.stages[0].trl   # bools stay bools


def test_an_unknown_trl_key_gets_a_did_you_mean_and_a_key_of_the_other_trainer_is_unknown(tmp_path):
    result = _mini_with_sft(tmp_path, "trl { save_total_limt 3  vllm_gpu_memory_utilization 0.5 }")
    found = {(d.code, d.message, d.help) for d in result.diagnostics}
    assert ("E214", "`save_total_limt` is not a `SFTConfig` key of the installed TRL",
            "did you mean `save_total_limit`?") in found
    assert any(c == "E214" and "vllm_gpu_memory_utilization" in m for c, m, _ in found)


def test_a_trl_key_craft_sets_names_the_craft_setting(tmp_path):
    result = _mini_with_sft(tmp_path, "trl { per_device_train_batch_size 2 }")
    [d] = [d for d in result.diagnostics if d.code == "E215"]
    assert d.help == "use the craft setting `per_device_batch`"


@pytest.mark.parametrize("key", ["gradient_checkpointing", "activation_checkpointing"])
def test_checkpointing_through_trl_names_the_craft_setting(tmp_path, key):
    """Both of transformers' names for it: the plan says it once, as `checkpointing`."""
    result = _mini_with_sft(tmp_path, f"trl {{ {key} true }}")
    [d] = [d for d in result.diagnostics if d.code == "E215"]
    assert d.help == "use the craft setting `checkpointing`"


def test_without_trl_the_keys_are_unchecked_with_a_warning(tmp_path, monkeypatch):
    real = trl_keys.importlib.util.find_spec
    monkeypatch.setattr(trl_keys.importlib.util, "find_spec",
                        lambda name, *a: None if name == "trl" else real(name, *a))
    trl_keys._class_index.cache_clear()
    try:
        result = _mini_with_sft(tmp_path, "trl { save_total_limt 3 }")
    finally:
        monkeypatch.undo()
        trl_keys._class_index.cache_clear()
    assert result.ok, result.render()
    [d] = result.diagnostics
    assert (d.code, d.severity) == ("W216", "warning")
    assert result.recipe.stages[0].trl == (("save_total_limt", 3),)


@pytest.mark.parametrize("kind, config", [("sft", "SFTConfig"), ("grpo", "GRPOConfig")])
def test_trl_config_keys_read_from_source_equal_the_dataclass_fields(kind, config):
    trl = pytest.importorskip("trl")    # the dev environment has TRL; this compares with it
    fields = {f.name for f in dataclasses.fields(getattr(trl, config)) if f.init}
    assert trl_config_keys(kind) == fields


def test_every_trl_key_craft_sets_is_a_field_of_some_trl_config():
    known = trl_config_keys("sft") | trl_config_keys("grpo")
    # warmup_ratio is gone from transformers 5 and still points to `warmup`.
    assert set(TRL_KEY_SETTING) - known == {"warmup_ratio"}
    assert TRL_KEY_SETTING["learning_rate"] == "lr" and "lr" in CRAFT_TO_TRL
