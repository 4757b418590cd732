"""Launch a training step under `accelerate launch`, after a preflight that takes seconds.

The whole command is built by one function (`accelerate_command`) and printed before it
runs, so what ran is always visible and can be pasted into a shell or a `launch.sh`.

Example:
    >>> cmd = accelerate_command("acc.yaml", 2, "runtime.train.sft", "sft.json")
    >>> cmd[-6:]
    ['--num_processes', '2', '-m', 'runtime.train.sft', '--config', 'sft.json']
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from collections import deque
from pathlib import Path

__all__ = ["LaunchError", "PreflightError", "accelerate_command", "preflight", "run_launch"]

_GPU_MODES = ("ddp", "fsdp2", "zero3")


class LaunchError(RuntimeError):
    """The launched training command failed."""


class PreflightError(RuntimeError):
    """The step cannot run here: missing model, devices or rollout engine."""


def _accelerate_prefix() -> list[str]:
    # The console script next to this interpreter, so a venv works without activation.
    script = Path(sys.executable).parent / "accelerate"
    if script.is_file():
        return [str(script), "launch"]
    return [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch"]


def accelerate_command(
    accelerate_config_path: str | os.PathLike,
    num_processes: int,
    script_module: str,
    config_path: str | os.PathLike,
    machine_rank: int | None = None,
) -> list[str]:
    """Build `accelerate launch --config_file C --num_processes N -m MODULE --config J`.

    Args:
        accelerate_config_path: YAML from `write_accelerate_config`.
        num_processes: Total processes over all machines.
        script_module: Python module to run in each process (e.g. `runtime.train.sft`).
        config_path: The step's JSON config, passed on as `--config`.
        machine_rank: This node's rank on multi-node runs (overrides the YAML's 0).

    Returns:
        The argv list; `shlex.join` it to print.
    """
    cmd = _accelerate_prefix() + ["--config_file", str(accelerate_config_path)]
    if machine_rank is not None:
        cmd += ["--machine_rank", str(machine_rank)]
    return cmd + ["--num_processes", str(num_processes), "-m", script_module, "--config", str(config_path)]


def run_launch(cmd: list[str], cwd: str | os.PathLike | None = None, env: dict | None = None,
               tail_lines: int = 40) -> None:
    """Print `cmd`, run it streaming its output, and raise if it fails.

    Args:
        cmd: From `accelerate_command`.
        cwd: Working directory (the project root, so `-m runtime...` resolves).
        env: Extra environment variables.
        tail_lines: How many last output lines the error message repeats.

    Raises:
        LaunchError: With the exit code, the command and the last output lines.
    """
    print("+ " + shlex.join(cmd), flush=True)
    full_env = {**os.environ, **(env or {})}
    tail: deque[str] = deque(maxlen=tail_lines)
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
    except FileNotFoundError as exc:
        raise LaunchError(f"cannot start `{cmd[0]}`: {exc}. Is accelerate installed in this environment?") from exc
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        tail.append(line.rstrip("\n"))
    code = proc.wait()
    if code != 0:
        raise LaunchError(f"training launch failed with exit code {code}: {shlex.join(cmd)}\n"
                          "last output:\n  " + "\n  ".join(tail))


def _check_model(model_dir) -> list[str]:
    from transformers import AutoConfig

    path = Path(model_dir)
    try:
        # local_files_only: preflight never downloads; a hub id must already be cached.
        AutoConfig.from_pretrained(str(model_dir), local_files_only=True)
    except Exception as exc:  # transformers raises OSError/ValueError/KeyError depending on the problem
        where = "directory" if path.exists() else "path (not found, and not in the local Hugging Face cache)"
        return [f"model `{model_dir}`: cannot load its config from this {where}: {str(exc).splitlines()[0]}. "
                "Build the base model first (tiny_moe) or download the model and give its local path"]
    return []


def _check_devices(stage: dict) -> list[str]:
    import torch

    parallel = stage.get("parallel", "cpu")
    gpus = int(stage.get("gpus", 1))
    if parallel not in _GPU_MODES:
        return []
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    errors = []
    if have < gpus:
        errors.append(f"parallel `{parallel}` asks for {gpus} GPU(s) per node but {have} CUDA device(s) are visible: "
                      "lower `gpus`, fix CUDA_VISIBLE_DEVICES, or use `parallel cpu`/`ddp_cpu` in this profile")
    if parallel == "zero3" and importlib.util.find_spec("deepspeed") is None:
        errors.append("parallel `zero3` needs DeepSpeed: `pip install 'trl[deepspeed]'` (or pick `fsdp2`)")
    return errors


def _check_rollout(stage: dict) -> list[str]:
    rollout = stage.get("rollout")
    if rollout is None:
        return []
    engine = rollout.split()[0] if isinstance(rollout, str) else rollout.get("engine")
    if engine == "transformers":
        return [] if importlib.util.find_spec("transformers") else ["rollout `transformers` needs transformers"]
    if engine == "vllm":
        if importlib.util.find_spec("vllm") is None:
            return ["rollout `vllm` needs vLLM, which pins its own torch/transformers: install it in a separate "
                    "environment (`pip install 'craft[vllm]'`) or use `rollout transformers`"]
        return []
    return [f"unknown rollout engine `{engine}` (choose `transformers` or `vllm`)"]


def preflight(stage: dict, model_dir) -> None:
    """Check in seconds that a stage can start here, collecting every problem.

    Checks that the model's config loads (locally, no download), that the GPUs the
    parallel mode asks for are visible (and DeepSpeed for `zero3`), and that the rollout
    engine imports (vLLM only when the stage asks for it).

    Args:
        stage: Stage settings (`parallel`, `gpus`, `rollout` are read).
        model_dir: Local model dir or a cached hub id.

    Raises:
        PreflightError: Naming each problem and its fix.
    """
    errors = _check_model(model_dir) + _check_devices(stage) + _check_rollout(stage)
    if errors:
        raise PreflightError("preflight failed:\n  " + "\n  ".join(errors))
