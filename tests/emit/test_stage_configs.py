"""Stage files load with the real libraries: TRL takes the kwargs, accelerate takes the YAML."""

from __future__ import annotations

import json

import pytest
import yaml
from accelerate.commands.config.config_args import ClusterConfig

from craftc.emit.stages import accelerate_mode, accelerate_yaml, trl_config, world_size
from craftc.ir import STAGE_MODELS, ModelSpec, StageBase


def stage_with(kind: str = "sft", **settings) -> StageBase:
    return STAGE_MODELS[kind](name="s", **settings)


def test_sft_kwargs_build_a_real_sft_config(tmp_path, recipe):
    from trl import SFTConfig

    config = SFTConfig(output_dir=str(tmp_path), **trl_config(recipe, recipe.stages[0]))
    assert config.assistant_only_loss is False     # labels come from specs/masking.json (runtime.train.masking)
    assert config.use_cpu is True and config.bf16 is False
    assert config.num_train_epochs == 1.0 and config.learning_rate == 3e-4


def test_a_cpu_stage_asking_for_bf16_trains_under_bf16_autocast_in_the_real_trainer(tmp_path, recipe):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer
    from trl import SFTConfig

    config = SFTConfig(output_dir=str(tmp_path), **{**trl_config(recipe, stage_with(mixed_precision="bf16")),
                                                     "report_to": []})
    assert config.use_cpu is True and config.bf16 is True and config.fp16 is False
    model = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2, vocab_size=100))
    seen = []
    model.model.layers[0].self_attn.q_proj.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    # The model as the Trainer's loop prepares it: matrix products in bf16, weights in float32.
    Trainer(model=model, args=config).accelerator.prepare_model(model)(input_ids=torch.tensor([[1, 2, 3]]))
    assert seen == [torch.bfloat16] and next(model.parameters()).dtype == torch.float32


def test_grpo_kwargs_build_a_real_grpo_config(tmp_path, recipe):
    from trl import GRPOConfig

    config = GRPOConfig(output_dir=str(tmp_path), **trl_config(recipe, recipe.stages[1]))
    assert config.num_generations == 4 and config.max_steps == 4
    assert config.reward_weights == [0.5, 0.2, 0.2, 0.1]
    assert config.use_vllm is False


def test_cluster_kwargs_are_all_real_trl_fields(recipe):
    import dataclasses

    from trl import GRPOConfig, SFTConfig

    sft = stage_with(parallel="zero3", gpus=8, nodes=2, mixed_precision="bf16", batch=256, per_device_batch=4)
    grpo = stage_with(kind="grpo", parallel="fsdp2", gpus=8, rollout="vllm", vllm_mode="server")
    for stage, cls in ((sft, SFTConfig), (grpo, GRPOConfig)):
        kwargs = trl_config(recipe, stage)
        assert set(kwargs) <= {f.name for f in dataclasses.fields(cls)}
    assert trl_config(recipe, sft)["gradient_accumulation_steps"] == 256 // (4 * 16)
    assert trl_config(recipe, sft)["bf16"] is True and trl_config(recipe, sft)["use_cpu"] is False
    assert trl_config(recipe, grpo)["use_vllm"] is True


@pytest.mark.parametrize("gpus, setting, recomputes", [
    (0, "auto", False), (0, "on", True), (0, "off", False),
    (8, "auto", True), (8, "on", True), (8, "off", False),
])
def test_checkpointing_is_on_with_gpus_off_on_cpu_unless_the_recipe_says(recipe, gpus, setting, recomputes):
    for kind in ("sft", "grpo"):
        stage = stage_with(kind, gpus=gpus, parallel="none" if gpus == 0 else "fsdp2", checkpointing=setting)
        assert trl_config(recipe, stage)["activation_checkpointing"] is recomputes
    # `auto` is the default and stays out of plan.json, so plans written before the setting keep their bytes.
    assert "checkpointing" not in stage_with(checkpointing="auto").model_dump()
    assert stage_with(checkpointing="on").model_dump()["checkpointing"] == "on"


def test_the_vllm_mode_reaches_trl_and_the_plan_only_with_a_vllm_rollout(recipe):
    """TRL reads `vllm_mode` only with `use_vllm`; anywhere else the mode would be a
    setting nothing reads (and `rollout transformers, server` is E523)."""
    served = stage_with(kind="grpo", gpus=8, rollout="vllm", vllm_mode="server")
    local = stage_with(kind="grpo")
    assert trl_config(recipe, served)["vllm_mode"] == "server"
    assert "vllm_mode" not in trl_config(recipe, local) and trl_config(recipe, local)["use_vllm"] is False
    assert served.model_dump()["vllm_mode"] == "server" and "vllm_mode" not in local.model_dump()
    # verl always colocates vLLM (E516 otherwise): nothing reads the mode there either.
    verl = stage_with(kind="grpo", engine="verl", gpus=8, rollout="vllm")
    assert "vllm_mode" not in verl.model_dump()
    # Read back, the absent mode is its default: what the runtime sees is unchanged.
    assert type(local).model_validate(local.model_dump()) == local


# (stage settings, what accelerate's loader must read from the emitted file:
#  distributed type, processes, use_cpu, mixed precision)
SETUPS = {
    "cpu": (dict(), ("NO", 1, True, "no")),
    # bf16 autocast on a CPU with hardware bf16 (AMX): accelerate reads it as asked.
    "cpu_bf16": (dict(mixed_precision="bf16"), ("NO", 1, True, "bf16")),
    "single_gpu": (dict(gpus=1, mixed_precision="bf16"), ("NO", 1, False, "bf16")),
    "multi_cpu": (dict(parallel="ddp", gpus=0, processes=2), ("MULTI_GPU", 2, True, "no")),
    "ddp": (dict(parallel="ddp", gpus=4, mixed_precision="bf16"), ("MULTI_GPU", 4, False, "bf16")),
    "fsdp2": (dict(parallel="fsdp2", gpus=8, mixed_precision="bf16"), ("FSDP", 8, False, "bf16")),
    "zero3": (dict(parallel="zero3", gpus=8, mixed_precision="bf16"), ("DEEPSPEED", 8, False, "bf16")),
}


@pytest.mark.parametrize("mode", SETUPS)
def test_each_mode_s_accelerate_yaml_loads_with_accelerate_as_intended(tmp_path, recipe, mode):
    settings, (distributed, processes, use_cpu, precision) = SETUPS[mode]
    stage = stage_with(**settings)
    assert accelerate_mode(stage) == mode.removesuffix("_bf16")
    path = tmp_path / "accelerate.yaml"
    path.write_text(accelerate_yaml(recipe, stage))
    loaded = ClusterConfig.from_yaml_file(str(path))          # accelerate's own loader: unknown keys raise
    assert (loaded.distributed_type, loaded.num_processes, loaded.use_cpu, loaded.mixed_precision) == \
        (distributed, processes, use_cpu, precision)
    assert loaded.num_machines == 1 and loaded.machine_rank == 0
    assert (loaded.gpu_ids == "all") == (mode == "ddp")


def test_fsdp2_wraps_each_decoder_layer_and_saves_a_full_state_dict(tmp_path, recipe):
    path = tmp_path / "accelerate.yaml"
    path.write_text(accelerate_yaml(recipe, stage_with(parallel="fsdp2", gpus=8, mixed_precision="bf16")))
    fsdp = ClusterConfig.from_yaml_file(str(path)).fsdp_config
    assert fsdp["fsdp_version"] == 2 and fsdp["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    assert fsdp["fsdp_transformer_layer_cls_to_wrap"] == "Qwen3MoeDecoderLayer"
    assert fsdp["fsdp_state_dict_type"] == "FULL_STATE_DICT"     # so final/ is an ordinary model dir


def test_multi_node_zero3_keeps_the_moe_block_whole_and_counts_every_process(tmp_path, recipe):
    path = tmp_path / "accelerate.yaml"
    path.write_text(accelerate_yaml(recipe, stage_with(parallel="zero3", gpus=8, nodes=2, mixed_precision="bf16")))
    loaded = ClusterConfig.from_yaml_file(str(path))
    assert loaded.num_processes == 16 and loaded.num_machines == 2
    assert loaded.deepspeed_config["deepspeed_moe_layer_cls_names"] == "Qwen3MoeSparseMoeBlock"
    assert loaded.main_process_port == 29500


def test_model_family_picks_the_layer_classes(recipe):
    gpt_oss = recipe.model_copy(update={"models": (ModelSpec(name="big", source="hub", path="openai/gpt-oss-120b"),)})
    text = accelerate_yaml(gpt_oss, stage_with(base="big", parallel="fsdp2", gpus=8, mixed_precision="bf16"))
    assert "fsdp_transformer_layer_cls_to_wrap: GptOssDecoderLayer" in text


def test_cpu_ddp_is_a_torchrun_config_with_one_process_per_cpu_worker(tmp_path, recipe):
    """accelerate 1.15 starts a MULTI_CPU config without a hostfile as one process, so CPU
    DDP is a MULTI_GPU (torchrun) config with use_cpu; `processes` counts per node."""
    stage = stage_with(parallel="ddp", gpus=0, nodes=2, processes=3, batch=48, per_device_batch=4)
    assert accelerate_mode(stage) == "multi_cpu" and world_size(stage) == 6
    path = tmp_path / "a.yaml"
    path.write_text(accelerate_yaml(recipe, stage))
    loaded = ClusterConfig.from_yaml_file(str(path))
    assert loaded.distributed_type == "MULTI_GPU" and loaded.use_cpu
    assert loaded.num_processes == 6 and loaded.num_machines == 2 and loaded.mixed_precision == "no"
    assert "gpu_ids" not in yaml.safe_load(path.read_text())
    kwargs = json.loads(json.dumps(trl_config(recipe, stage)))
    assert kwargs["use_cpu"] is True and kwargs["gradient_accumulation_steps"] == 48 // (4 * 6)


def test_processes_default_to_one_cpu_process_per_node(recipe):
    assert world_size(stage_with(parallel="ddp", gpus=0, nodes=2)) == 2
    assert world_size(stage_with()) == 1


def test_only_an_sft_stage_with_prefix_epochs_has_a_curriculum_in_the_plan(recipe, solutions):
    """`prefix_epochs` is not a TRL key: it drives its own plan file, which the trainer reads."""
    from craftc.emit.plan import render_plan_files

    sft = next(s for s in recipe.stages if s.kind == "sft")
    assert sft.prefix_epochs == 0 and "stages/sft/curriculum.json" not in render_plan_files(recipe, solutions)
    warmed = recipe.model_copy(update={"stages": tuple(
        s.model_copy(update={"prefix_epochs": 2.0}) if s.kind == "sft" else s for s in recipe.stages)})
    files = render_plan_files(warmed, solutions)
    assert json.loads(files["stages/sft/curriculum.json"]) == {"cut_after": "</THINK>", "prefix_epochs": 2.0,
                                                                   "history": "conversation"}
    assert "prefix_epochs" not in json.loads(files["stages/sft/trl_config.json"])
    assert "stages/grpo/curriculum.json" not in files


def test_question_dropout_alone_gives_the_sft_stage_a_curriculum_without_a_warm_up(recipe, solutions):
    from craftc.emit.plan import render_plan_files

    dropped = recipe.model_copy(update={"stages": tuple(
        s.model_copy(update={"question_dropout": 0.2}) if s.kind == "sft" else s for s in recipe.stages)})
    spec = json.loads(render_plan_files(dropped, solutions)["stages/sft/curriculum.json"])
    assert spec["question_dropout"] == 0.2 and spec["prefix_epochs"] == 0.0
    sft = next(s for s in dropped.model_dump(mode="json", by_alias=True)["stages"] if s["kind"] == "sft")
    assert sft["question_dropout"] == 0.2
    assert "question_dropout" not in next(s for s in recipe.model_dump(mode="json", by_alias=True)["stages"]
                                          if s["kind"] == "sft")
