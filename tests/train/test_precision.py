"""How training loads its model (runtime.train.precision) and which layer classes it wraps
(runtime.train.launch.fit_layer_classes): float32 master weights under bf16, the GPU before
GRPO's first measurement, MXFP4 unpacked, classes from the model's config, not its name."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from runtime.train.launch import fit_layer_classes, model_layer_classes
from runtime.train.precision import load_for_training, master_dtype, quantized_load_kwargs


def args(bf16=True, fp16=False, device="cpu", world_size=1):
    return SimpleNamespace(bf16=bf16, fp16=fp16, device=torch.device(device), world_size=world_size)


def test_an_update_at_lr_1e_6_rounds_away_in_bf16_and_not_in_float32():
    # Why the master weights are float32: bf16 has 8 bits of mantissa.
    one = torch.ones(1, dtype=torch.bfloat16)
    assert torch.equal(one - 1e-6, one)
    assert not torch.equal(torch.ones(1) - 1e-6, torch.ones(1))


def test_mixed_precision_bf16_keeps_float32_master_weights(monkeypatch):
    monkeypatch.delenv("ACCELERATE_USE_DEEPSPEED", raising=False)
    assert master_dtype(args(bf16=True)) == torch.float32
    assert master_dtype(args(bf16=False)) == torch.float32


def test_deepspeed_keeps_its_own_master_copies(monkeypatch):
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    assert master_dtype(args(bf16=True)) == torch.bfloat16
    assert master_dtype(args(bf16=False)) == torch.float32


def test_a_single_gpu_grpo_loads_float32_weights_onto_the_step_device(tiny_model_dir, monkeypatch):
    monkeypatch.delenv("ACCELERATE_USE_DEEPSPEED", raising=False)
    moved = []
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, *a, **k: moved.append(a) or self)
    model = load_for_training(tiny_model_dir, args(bf16=True, device="meta"))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert moved == [(torch.device("meta"),)]          # before anything (GRPO's measurement) runs on it
    moved.clear()
    load_for_training(tiny_model_dir, args(bf16=True, device="cpu"))
    load_for_training(tiny_model_dir, args(bf16=True, device="meta", world_size=2))   # the launcher places it
    assert moved == []


def test_an_mxfp4_checkpoint_is_unpacked_for_training(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt_oss", "quantization_config":
                                                      {"quant_method": "mxfp4"}}))
    config = quantized_load_kwargs(tmp_path)["quantization_config"]
    assert type(config).__name__ == "Mxfp4Config" and config.dequantize is True
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert quantized_load_kwargs(tmp_path) == {}


PLAN_YAML = """distributed_type: FSDP
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: Qwen3MoeDecoderLayer
  fsdp_version: 2
mixed_precision: 'bf16'
"""


@pytest.mark.parametrize("config,layer,block", [
    ({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}, "Qwen3DecoderLayer", "Qwen3MLP"),
    ({"model_type": "qwen3_moe"}, "Qwen3MoeDecoderLayer", "Qwen3MoeSparseMoeBlock"),
    ({"model_type": "gpt_oss"}, "GptOssDecoderLayer", "GptOssMLP"),
    ({"model_type": "llama"}, "LlamaDecoderLayer", "LlamaMLP"),
])
def test_the_layer_classes_come_from_the_models_config(config, layer, block):
    assert model_layer_classes(config) == (layer, block)


def test_a_dense_model_named_qwen3_is_not_wrapped_as_moe():
    text, notes = fit_layer_classes(PLAN_YAML, {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]})
    assert "fsdp_transformer_layer_cls_to_wrap: Qwen3DecoderLayer\n" in text
    assert text.replace("Qwen3DecoderLayer", "Qwen3MoeDecoderLayer") == PLAN_YAML
    assert notes == ["`fsdp_transformer_layer_cls_to_wrap` is Qwen3DecoderLayer for this model (model_type `qwen3`), "
                     "not the plan's Qwen3MoeDecoderLayer"]


def test_a_plan_that_fits_its_model_is_launched_as_compiled():
    assert fit_layer_classes(PLAN_YAML, {"model_type": "qwen3_moe"}) == (PLAN_YAML, [])
    assert fit_layer_classes(PLAN_YAML, {}) == (PLAN_YAML, [])


def test_zero3_keeps_the_models_own_block_whole():
    plan = "deepspeed_config:\n  deepspeed_moe_layer_cls_names: Qwen3MoeSparseMoeBlock\n  zero_stage: 3\n"
    text, notes = fit_layer_classes(plan, {"model_type": "gpt_oss"})
    assert "  deepspeed_moe_layer_cls_names: GptOssMLP\n" in text and len(notes) == 1


def test_launch_sh_reads_the_fitted_config_where_the_runtime_wrote_one(tmp_path):
    from craftc.emit.stages import launch_script
    from craftc.frontend import load_recipe
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    recipe = load_recipe(root / "recipes/ads_analytics.craft", profile="gpu").recipe
    script = launch_script(recipe, next(s for s in recipe.stages if s.kind == "sft"))
    assert '--config_file "${CRAFT_ACCELERATE_CONFIG:-$PLAN_DIR/stages/sft/accelerate.yaml}"' in script


def test_a_cpu_stage_asking_bf16_of_a_cpu_without_it_is_warned_on_the_console(monkeypatch):
    import io
    import types

    from rich.console import Console

    from runtime.train import precision

    def warned(flags, **stage):
        monkeypatch.setattr(precision, "cpu_bf16_flags", lambda cpuinfo=None: flags)
        out = io.StringIO()
        ctx = types.SimpleNamespace(console=Console(file=out, width=400), launch=True)
        precision.warn_stage_software_bf16(ctx, types.SimpleNamespace(name="sft", **stage))
        return out.getvalue()

    assert "stage sft: bf16 on a CPU without hardware bf16" in warned([], gpus=0, mixed_precision="bf16")
    assert warned(["amx_bf16"], gpus=0, mixed_precision="bf16") == ""
    assert warned([], gpus=0, mixed_precision="no") == ""
    assert warned([], gpus=8, mixed_precision="bf16") == ""
