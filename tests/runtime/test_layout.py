"""The run-dir paths steps share: one name each, read through ``ctx.input``."""

from __future__ import annotations

import pytest
from rich.console import Console

from craftc.ir import STAGE_MODELS, LoraAdapter, Plan, Recipe, Schema
from runtime.export import ExportError, stage_model_dir
from runtime.layout import GRPO_FINAL, SFT_FINAL, TRAIN_INSTANCES, WAREHOUSE, sft_final, trained_model
from runtime.step_context import StepContext, StepError


def test_a_launch_config_names_upstream_files_relative_to_its_own_step_dir():
    # grpo/grpo_config.json travels with the run dir to a cluster: no absolute paths.
    assert SFT_FINAL.relative_to_step("grpo") == "../sft/craft/final"
    assert WAREHOUSE.relative_to_step("grpo") == "../world/warehouse.duckdb"
    assert TRAIN_INSTANCES.relative_to_step("grpo") == "train_instances.json"


def test_the_model_a_stage_leaves_is_the_one_the_next_step_and_export_read(tmp_path):
    assert trained_model("sft") == sft_final("craft") == SFT_FINAL
    assert trained_model("grpo") == GRPO_FINAL
    assert trained_model("grpo", adapter=True).under(tmp_path) == tmp_path / "grpo" / "adapter"
    for kind in ("sft", "grpo"):
        final = trained_model(kind).under(tmp_path)
        final.mkdir(parents=True)
        (final / "config.json").write_text("{}")
        assert stage_model_dir(tmp_path, STAGE_MODELS[kind](name=kind)) == final
    lora = STAGE_MODELS["grpo"](name="grpo", lora=LoraAdapter())
    with pytest.raises(ExportError, match="holds no trained model"):
        stage_model_dir(tmp_path, lora, adapter_only=True)


def test_reading_an_output_of_a_step_that_did_not_finish_names_the_command(tmp_path):
    plan = Plan(craftc_version="test", recipe=Recipe(name="r", schema=Schema(name="s", version=1, source="s.craft")))
    ctx = StepContext(plan, tmp_path / "plan", tmp_path / "run", tmp_path / "out", Console(), 0)
    (tmp_path / "run" / "world").mkdir(parents=True)          # no manifest: interrupted
    with pytest.raises(StepError, match="--only world"):
        ctx.input(WAREHOUSE)
    (tmp_path / "run" / "world" / "manifest.json").write_text("{}")
    assert ctx.input(WAREHOUSE) == tmp_path / "run" / "world" / "warehouse.duckdb"
