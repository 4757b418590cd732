"""Launches parse and really run with the compiled accelerate config."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
import time

import pytest

from runtime.train.launch import (LaunchError, PreflightError, concurrent_threads, launch_env, preflight, run_launch,
                                  run_launches, stage_command)

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
    # Unset CRAFT_ACCELERATE_CONFIG: the plan's own accelerate.yaml.
    body = body.replace('"${CRAFT_ACCELERATE_CONFIG:-$PLAN_DIR/stages/sft/accelerate.yaml}"',
                        '"$PLAN_DIR/stages/sft/accelerate.yaml"')
    argv = shlex.split(body.replace("$PLAN_DIR", str(plan)).replace("$CONFIG", "step.json"))
    args = launch_command_parser().parse_args(argv[argv.index("launch") + 1:])
    assert args.config_file == f"{plan}/stages/sft/accelerate.yaml" and args.module is True
    assert args.training_script == "runtime.train.sft"
    assert args.training_script_args == ["--plan-dir", str(plan), "--stage", "sft", "--config", "step.json"]


def test_two_cpu_processes_run_sft_with_the_compiled_accelerate_config(tiny_model_dir, dataset_dir, tmp_path,
                                                                        capsys):
    """DDP over gloo on CPU, launched with the plan's launch.sh for `parallel ddp  gpus 0  processes 2`:
    the same command a GPU cluster runs."""
    from accelerate.commands.config.config_args import load_config_from_file

    plan = _hello_plan(tmp_path, CPU_DDP_SFT)
    acc = load_config_from_file(str(plan / "stages" / "sft" / "accelerate.yaml"))
    assert (acc.distributed_type, acc.num_processes, acc.use_cpu) == ("MULTI_GPU", 2, True)
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


def test_concurrent_launches_run_at_the_same_time_and_prefix_each_line_with_their_name(tmp_path, capsys):
    # Each command writes a file and waits for the other's: they finish only if both run at once.
    def waits_for(me: str, other: str) -> list[str]:
        code = (f"import pathlib, time; d = pathlib.Path({str(tmp_path)!r}); (d / {me!r}).touch(); "
                f"t = time.time()\nwhile not (d / {other!r}).exists() and time.time() - t < 20: time.sleep(0.05)\n"
                f"print('saw', {other!r}, (d / {other!r}).exists())")
        return [sys.executable, "-c", code]

    run_launches({"craft": waits_for("craft", "stuffed"), "stuffed": waits_for("stuffed", "craft")})
    out = capsys.readouterr().out
    assert "[craft] saw stuffed True" in out and "[stuffed] saw craft True" in out


def test_a_failing_concurrent_launch_stops_the_other_and_names_itself(tmp_path):
    started = time.monotonic()
    with pytest.raises(LaunchError) as err:
        run_launches({"craft": [sys.executable, "-c", "import time; time.sleep(60)"],
                      "stuffed": [sys.executable, "-c", "print('out of memory at step 2'); raise SystemExit(4)"]})
    message = str(err.value)
    assert "`stuffed` failed with exit code 4" in message and "out of memory at step 2" in message
    assert "(stopped craft)" in message
    assert time.monotonic() - started < 30          # the sleeping arm was stopped, not waited for


def test_concurrent_arms_share_the_physical_cores_unless_the_thread_count_is_set(monkeypatch):
    import psutil

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 8)
    assert (concurrent_threads(2), concurrent_threads(4), concurrent_threads(16)) == (4, 2, 1)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert concurrent_threads(2) == 3
