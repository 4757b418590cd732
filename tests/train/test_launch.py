"""accelerate configs load with accelerate's own loader; launches parse and really run."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys

import pytest

from runtime.train.accelerate_configs import (
    PARALLEL_MODES, AccelerateConfigError, accelerate_config, write_accelerate_config)
from runtime.train.launch import LaunchError, PreflightError, launch_env, preflight, run_launch, stage_command

EXPECTED_TYPE = {"cpu": "NO", "ddp_cpu": "MULTI_GPU", "ddp": "MULTI_GPU", "fsdp2": "FSDP", "zero3": "DEEPSPEED"}


def config_for(mode: str, nodes: int = 1) -> dict:
    gpus = 1 if mode == "cpu" else 2
    ip = "10.0.0.1" if nodes > 1 else None
    return accelerate_config(mode, gpus=gpus, nodes=nodes, main_process_ip=ip)


@pytest.mark.parametrize("mode", PARALLEL_MODES)
def test_each_config_loads_with_accelerates_loader(mode, tmp_path):
    from accelerate.commands.config.config_args import load_config_from_file

    path = write_accelerate_config(config_for(mode), tmp_path / f"{mode}.yaml")
    loaded = load_config_from_file(str(path))
    assert loaded.distributed_type.value == EXPECTED_TYPE[mode]
    assert loaded.num_processes == (1 if mode == "cpu" else 2)
    assert loaded.use_cpu == (mode in ("cpu", "ddp_cpu"))


def test_fsdp2_and_zero3_carry_the_moe_specific_fields():
    fsdp = accelerate_config("fsdp2", gpus=8)["fsdp_config"]
    assert fsdp["fsdp_version"] == 2
    assert fsdp["fsdp_transformer_layer_cls_to_wrap"] == "Qwen3MoeDecoderLayer"
    ds = accelerate_config("zero3", gpus=8, moe_block_class="GptOssMLP")["deepspeed_config"]
    assert ds["zero_stage"] == 3 and ds["deepspeed_moe_layer_cls_names"] == "GptOssMLP"


def test_multi_node_counts_every_process_and_needs_the_main_ip(tmp_path):
    from accelerate.commands.config.config_args import load_config_from_file

    cfg = config_for("zero3", nodes=2)
    assert (cfg["num_machines"], cfg["num_processes"], cfg["main_process_ip"]) == (2, 4, "10.0.0.1")
    loaded = load_config_from_file(str(write_accelerate_config(cfg, tmp_path / "mn.yaml")))
    assert loaded.main_process_port == 29500 and loaded.machine_rank == 0
    with pytest.raises(AccelerateConfigError, match="main_process_ip"):
        accelerate_config("ddp", gpus=8, nodes=2)


def test_impossible_requests_are_refused_with_every_reason():
    with pytest.raises(AccelerateConfigError) as err:
        accelerate_config("zero4", gpus=0)
    assert "unknown parallel mode `zero4`" in str(err.value) and "`gpus` must be" in str(err.value)
    with pytest.raises(AccelerateConfigError, match="float32 on CPU"):
        accelerate_config("ddp_cpu", gpus=2, mixed_precision="bf16")


def test_written_yaml_is_byte_reproducible(tmp_path):
    a = write_accelerate_config(config_for("fsdp2"), tmp_path / "a.yaml").read_bytes()
    assert a == write_accelerate_config(config_for("fsdp2"), tmp_path / "b.yaml").read_bytes()


CPU_DDP_SFT = "stage sft  { base tiny_moe  steps 3  lr 3e-3  batch 4  per_device_batch 2  max_length 1024  " \
              "parallel ddp  gpus 0  processes 2 }"


def _hello_plan(tmp_path, stage_line: str):
    from craftc.emit.compile import compile_to_dir

    hello = _project_root() / "examples" / "hello"
    recipe_dir = tmp_path / "recipe"
    recipe_dir.mkdir()
    for name in ("schema.craft", "solutions"):
        (recipe_dir / name).symlink_to(hello / name, target_is_directory=(hello / name).is_dir())
    text = (hello / "hello.craft").read_text()
    old = "stage sft  { base tiny_moe  epochs 1  batch 8  per_device_batch 8  max_length 512 }"
    assert old in text
    (recipe_dir / "hello.craft").write_text(text.replace(old, stage_line))
    compiled = compile_to_dir(recipe_dir / "hello.craft", tmp_path / "plan")
    assert compiled.ok, compiled.load.render()
    return tmp_path / "plan"


def test_the_launch_script_runs_an_accelerate_command_accelerate_accepts(tmp_path):
    from accelerate.commands.launch import launch_command_parser

    plan = _hello_plan(tmp_path, CPU_DDP_SFT)
    script = plan / "stages" / "sft" / "launch.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    # The argv the script execs, with its variables filled in.
    body = script.read_text().split("CMD=(", 1)[1].split(")\n", 1)[0]
    argv = shlex.split(body.replace("$PLAN_DIR", str(plan)).replace("$CONFIG", "step.json"))
    args = launch_command_parser().parse_args(argv[argv.index("launch") + 1:])
    assert args.config_file == f"{plan}/stages/sft/accelerate.yaml" and args.module is True
    assert args.training_script == "runtime.train.sft"
    assert args.training_script_args == ["--plan-dir", str(plan), "--stage", "sft", "--config", "step.json"]


def test_two_cpu_processes_run_sft_with_the_compiled_accelerate_config(tiny_model_dir, dataset_dir, tmp_path,
                                                                        capsys):
    """DDP over gloo on CPU, launched with the plan's launch.sh for `parallel ddp  gpus 0  processes 2`:
    the same command a GPU cluster runs."""
    import yaml

    plan = _hello_plan(tmp_path, CPU_DDP_SFT)
    acc = plan / "stages" / "sft" / "accelerate.yaml"
    assert yaml.safe_load(acc.read_text()) == accelerate_config("ddp_cpu", gpus=2)
    trl_kwargs = json.loads((plan / "stages" / "sft" / "trl_config.json").read_text())
    assert trl_kwargs["gradient_accumulation_steps"] == 1          # 4 = 2 per process x 2 processes

    config = tmp_path / "step" / "sft.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"model_dir": str(tiny_model_dir), "dataset_dir": str(dataset_dir),
                                  "out_dir": "out", "trl_overrides": {}}))
    cmd = stage_command(plan / "stages" / "sft" / "launch.sh", config)
    run_launch(cmd, cwd=str(tmp_path), env=launch_env())
    assert capsys.readouterr().out.startswith("+ " + shlex.join(cmd))  # printed before it ran
    out = config.parent / "out"                                        # relative to the config file
    summary = json.loads((out / "sft_summary.json").read_text())
    assert summary["world_size"] == 2 and summary["steps"] == 3
    assert (out / "final" / "model.safetensors").is_file()


def test_a_failing_launch_names_the_exit_code_and_shows_the_output():
    with pytest.raises(LaunchError) as err:
        run_launch([sys.executable, "-c", "print('boom at step 3'); raise SystemExit(3)"])
    assert "exit code 3" in str(err.value) and "boom at step 3" in str(err.value)


def test_preflight_passes_for_a_local_cpu_stage(tiny_model_dir):
    preflight({"parallel": "none", "gpus": 0, "rollout": "transformers"}, tiny_model_dir)


def test_preflight_names_each_missing_piece(tmp_path):
    import torch

    stage = {"parallel": "ddp", "gpus": torch.cuda.device_count() + 1, "rollout": "vllm colocate"}
    with pytest.raises(PreflightError) as err:
        preflight(stage, tmp_path / "no_such_model")
    msg = str(err.value)
    assert "no_such_model" in msg and "CUDA device(s) are visible" in msg
    assert ("rollout `vllm` needs vLLM" in msg) == (importlib.util.find_spec("vllm") is None)
    assert ("rollout `vllm` needs a CUDA GPU" in msg) == (not torch.cuda.is_available())


def _project_root():
    from pathlib import Path

    return Path(__file__).resolve().parents[2]
