"""Launch a training stage through the plan's `launch.sh`, after a preflight that takes seconds.

The command a step runs is the plan's own `stages/<stage>/launch.sh STEP_CONFIG.json`
(which runs `accelerate launch` with the plan's accelerate config): printed before it
runs, and the same command a user runs by hand on a cluster.

Example:
    >>> stage_command("build/ads/stages/sft/launch.sh", "runs/ads/sft/craft_config.json")
    ['bash', 'build/ads/stages/sft/launch.sh', 'runs/ads/sft/craft_config.json']
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from runtime.train.core_share import CORE_SHARE_ENV, write_share

__all__ = ["LAYER_CLASSES", "LaunchError", "PreflightError", "concurrent_threads", "fit_layer_classes",
           "model_layer_classes", "launch_env", "launch_stage",
           "launch_stages_concurrently", "preflight", "run_launch", "run_launches", "stage_command"]

_GPU_MODES = ("ddp", "fsdp2", "zero3")


class LaunchError(RuntimeError):
    """The launched training command failed."""


class PreflightError(RuntimeError):
    """The step cannot run here: missing model, devices or rollout engine."""


def stage_command(launch_script: str | os.PathLike, step_config: str | os.PathLike) -> list[str]:
    """`bash PLAN/stages/<stage>/launch.sh STEP_CONFIG.json` as an argv list."""
    return ["bash", str(launch_script), str(step_config)]


def launch_env() -> dict[str, str]:
    """The environment a launch runs in: this interpreter's `accelerate` first on PATH,
    so a virtual environment works without being activated."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
            "TOKENIZERS_PARALLELISM": "false"}


def launch_stage(ctx, step: str, stage_name: str, step_config: Path) -> list[str]:
    """Run the stage's `launch.sh` with a step config (or, under `--no-launch`, print it).

    Returns:
        The command as it reads once the step dir is in place (for the step's metrics).
    """
    script = ctx.artifact(f"stages/{stage_name}/launch.sh")
    plan_yaml = ctx.artifact(f"stages/{stage_name}/accelerate.yaml")      # read by accelerate, through launch.sh
    if ctx.launch:
        run_launch(stage_command(script, step_config),
                   env={**launch_env(), **_fitted_config_env(ctx, plan_yaml, step_config)})
    return _final_command(ctx, step, script, step_config)


# The classes FSDP wraps and DeepSpeed keeps whole, by the `model_type` in a model's
# config.json: (decoder layer, block kept whole: the MoE block, or a dense model's MLP).
LAYER_CLASSES: dict[str, tuple[str, str]] = {
    "qwen3_moe": ("Qwen3MoeDecoderLayer", "Qwen3MoeSparseMoeBlock"),
    "qwen3": ("Qwen3DecoderLayer", "Qwen3MLP"),
    "qwen2_moe": ("Qwen2MoeDecoderLayer", "Qwen2MoeSparseMoeBlock"),
    "qwen2": ("Qwen2DecoderLayer", "Qwen2MLP"),
    "llama": ("LlamaDecoderLayer", "LlamaMLP"),
    "mistral": ("MistralDecoderLayer", "MistralMLP"),
    "mixtral": ("MixtralDecoderLayer", "MixtralSparseMoeBlock"),
    "gpt_oss": ("GptOssDecoderLayer", "GptOssMLP"),
}
_YAML_CLASS_KEYS = (("fsdp_transformer_layer_cls_to_wrap", 0), ("deepspeed_moe_layer_cls_names", 1))


def model_layer_classes(model_config: dict) -> tuple[str, str] | None:
    """(decoder layer, block kept whole) of a model, from its config's `model_type`, else from
    its architecture's name (`FooForCausalLM` -> `FooDecoderLayer`); None if neither says.

    Example:
        >>> model_layer_classes({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]})
        ('Qwen3DecoderLayer', 'Qwen3MLP')
        >>> model_layer_classes({"model_type": "phi3", "architectures": ["Phi3ForCausalLM"]})
        ('Phi3DecoderLayer', 'Phi3MLP')
    """
    known = LAYER_CLASSES.get(model_config.get("model_type", ""))
    if known:
        return known
    arch = next(iter(model_config.get("architectures") or []), "")
    if arch.endswith("ForCausalLM") and len(arch) > len("ForCausalLM"):
        prefix = arch[: -len("ForCausalLM")]
        return f"{prefix}DecoderLayer", f"{prefix}MLP"
    return None


def fit_layer_classes(yaml_text: str, model_config: dict) -> tuple[str, list[str]]:
    """The accelerate config with its layer classes those of the model it trains.

    The compiler picks them before any model exists, from the model's name; the model's
    own config.json says what it is (a dense model named `qwen3-...` has no MoE block).
    Returns the text (unchanged if it already fits) and a note per class changed.
    """
    classes = model_layer_classes(model_config)
    if classes is None:
        return yaml_text, []
    lines, notes = yaml_text.splitlines(keepends=True), []
    for i, line in enumerate(lines):
        for key, which in _YAML_CLASS_KEYS:
            head = f"  {key}: "
            if line.startswith(head):
                planned, wanted = line[len(head):].strip(), classes[which]
                if planned != wanted:
                    lines[i] = f"{head}{wanted}\n"
                    notes.append(f"`{key}` is {wanted} for this model (model_type "
                                 f"`{model_config.get('model_type')}`), not the plan's {planned}")
    return "".join(lines), notes


def _fitted_config_env(ctx, plan_yaml: Path, step_config: Path) -> dict[str, str]:
    """`CRAFT_ACCELERATE_CONFIG` for launch.sh, where the plan's classes do not fit the model."""
    import json

    try:
        config = json.loads(step_config.read_text(encoding="utf-8"))
        model_dir = step_config.resolve().parent / config["model_dir"]
        model_config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    text, notes = fit_layer_classes(plan_yaml.read_text(encoding="utf-8"), model_config)
    if not notes:
        return {}
    fitted = step_config.with_name(step_config.stem + ".accelerate.yaml")
    fitted.write_text(text, encoding="utf-8")
    for note in notes:
        ctx.console.print(f"note: {note}; launching with {fitted}")
    return {"CRAFT_ACCELERATE_CONFIG": str(fitted.resolve())}


def _final_command(ctx, step: str, script: Path, step_config: Path) -> list[str]:
    """The launch command as it reads once the step dir is in place; printed under `--no-launch`."""
    # The step dir is renamed into place when the step ends: name the config where it will be.
    final = stage_command(script, ctx.run_dir / step / step_config.relative_to(ctx.out_dir))
    if not ctx.launch:
        ctx.console.print(f"launch by hand: {shlex.join(final)}")
    return final


def _start(cmd: list[str], cwd, env: dict) -> subprocess.Popen:
    """`cmd` started with its output (stderr too) on a line-buffered pipe."""
    try:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
    except FileNotFoundError as exc:
        raise LaunchError(f"cannot start `{cmd[0]}`: {exc}. Is accelerate installed in this environment?") from exc


def launch_stages_concurrently(ctx, step: str, stage_name: str, step_configs: dict[str, Path],
                               processes: int = 1, takers: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Run the stage's `launch.sh` once per step config, all at the same time, sharing the cores.

    Each launch gets `OMP_NUM_THREADS` from :func:`concurrent_threads` (accelerate reads it as
    `--num_cpu_threads_per_process`), so together they use the machine's cores once over.
    The launches named in `takers` take the cores of those that finish before them
    (runtime.train.core_share); they train in MKL's strict mode, so their floats do not
    depend on when that happens. The others keep their threads and MKL's default mode.

    Returns:
        Each config's command as it reads once the step dir is in place, by name.
    """
    script = ctx.artifact(f"stages/{stage_name}/launch.sh")
    plan_yaml = ctx.artifact(f"stages/{stage_name}/accelerate.yaml")
    if ctx.launch:
        threads = concurrent_threads(len(step_configs) * processes)
        ctx.console.print(f"{' and '.join(step_configs)} train at the same time, {threads} CPU thread(s) per "
                          "process; each output line starts with its name")
        commands = {name: stage_command(script, config) for name, config in step_configs.items()}
        env = {**launch_env(), "OMP_NUM_THREADS": str(threads),
               **_fitted_config_env(ctx, plan_yaml, next(iter(step_configs.values())))}
        takers = tuple(name for name in takers if name in commands)
        if not takers or pinned_threads() is not None or not thread_count_free_floats():
            run_launches(commands, env=env)      # the user's count, or one that must not change
        else:
            with tempfile.TemporaryDirectory(prefix="craft-cores-") as tmp:
                share = Path(tmp) / "threads"
                write_share(share, threads)
                taker_env = {CORE_SHARE_ENV: str(share), MKL_REPRODUCIBLE[0]: MKL_REPRODUCIBLE[1]}

                def on_exit(name: str, running: list[str]) -> None:
                    # The finished launch's cores go to the takers, once only takers still train.
                    if all(other in takers for other in running):
                        more = concurrent_threads(len(running) * processes)
                        write_share(share, more)
                        ctx.console.print(f"{name} is done: {' and '.join(running)} now "
                                          f"train{'s' if len(running) == 1 else ''} on {more} CPU thread(s) "
                                          "per process")

                run_launches(commands, env=env, on_exit=on_exit, extra_env={name: taker_env for name in takers})
    return {name: _final_command(ctx, step, script, config) for name, config in step_configs.items()}


def concurrent_threads(processes: int) -> int:
    """CPU threads for each of `processes` training processes that run at once.

    A thread count already set in `OMP_NUM_THREADS` is kept (as accelerate keeps it); otherwise
    the machine's physical cores are divided between the processes, at least one each.
    """
    import psutil

    pinned = pinned_threads()
    if pinned is not None:
        return pinned
    cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    return max(1, cores // processes)


# Intel MKL's strict conditional numerical reproducibility: its matrix products give the same
# bits on any number of threads. Torch's own CPU kernels for these models split their work
# by rows, so with it a trainer's floats do not depend on its thread count, and a freed core
# can be handed over mid-run (tests/train/test_core_share.py checks the gradients bit for bit).
MKL_REPRODUCIBLE = ("MKL_CBWR", "AUTO,STRICT")


def thread_count_free_floats() -> bool:
    """Whether training here gives the same floats on any thread count: torch's BLAS is MKL,
    and the user has not set MKL's reproducibility mode otherwise."""
    import torch

    return torch.backends.mkl.is_available() and os.environ.get(MKL_REPRODUCIBLE[0], MKL_REPRODUCIBLE[1]) == \
        MKL_REPRODUCIBLE[1]


def pinned_threads() -> int | None:
    """The thread count the user set in `OMP_NUM_THREADS`, if any."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def run_launches(cmds: dict[str, list[str]], cwd: str | os.PathLike | None = None, env: dict | None = None,
                 tail_lines: int = 40, on_exit: Callable[[str, list[str]], None] | None = None,
                 extra_env: dict[str, dict[str, str]] | None = None, what: str = "training launch") -> None:
    """Run several commands at once, each output line prefixed with `[name] `, and raise if one fails.

    When one fails the others are stopped (their step dir is a temporary one the runner discards),
    and the error names the failed command and repeats its last output lines. When one succeeds
    while others still run, `on_exit(name, names_still_running)` is called. `extra_env` adds
    variables to some commands' environment, by name; `what` names the commands in an error.

    Raises:
        LaunchError: For the first command that failed.
    """
    full_env = {**os.environ, **(env or {})}
    procs: dict[str, subprocess.Popen] = {}
    tails = {name: deque(maxlen=tail_lines) for name in cmds}
    write = threading.Lock()
    relays: list[threading.Thread] = []
    stopped: list[str] = []

    def relay(name: str, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with write:
                sys.stdout.write(f"[{name}] {line}")
                sys.stdout.flush()
            tails[name].append(line.rstrip("\n"))

    try:
        for name, cmd in cmds.items():
            print(f"[{name}] + " + shlex.join(cmd), flush=True)
            procs[name] = _start(cmd, cwd, {**full_env, **(extra_env or {}).get(name, {})})
        relays = [threading.Thread(target=relay, args=item, daemon=True) for item in procs.items()]
        for relay_thread in relays:
            relay_thread.start()
        failed: str | None = None
        finished: set[str] = set()
        while failed is None and any(proc.poll() is None for proc in procs.values()):
            failed = next((name for name, proc in procs.items() if proc.poll() not in (None, 0)), None)
            if failed is None:
                running = [name for name, proc in procs.items() if proc.poll() is None]
                for name in procs:
                    if name not in finished and name not in running:
                        finished.add(name)
                        if on_exit is not None and running:
                            on_exit(name, running)
                time.sleep(0.2)
        failed = failed or next((name for name, proc in procs.items() if proc.returncode != 0), None)
    finally:
        for name, proc in procs.items():     # a failure, or an interrupt: stop what still runs
            if proc.poll() is None:
                stopped.append(name)
                proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for relay_thread in relays:
        relay_thread.join(timeout=5)
    if failed is not None:
        raise LaunchError(f"{what} `{failed}` failed with exit code {procs[failed].returncode}: "
                          f"{shlex.join(cmds[failed])}" + (f" (stopped {', '.join(stopped)})" if stopped else "")
                          + "\nlast output:\n  " + "\n  ".join(tails[failed]))


def run_launch(cmd: list[str], cwd: str | os.PathLike | None = None, env: dict | None = None,
               tail_lines: int = 40) -> None:
    """Print `cmd`, run it streaming its output, and raise if it fails.

    Args:
        cmd: From `stage_command`.
        cwd: Working directory (the project root, so `-m runtime...` resolves).
        env: Extra environment variables.
        tail_lines: How many last output lines the error message repeats.

    Raises:
        LaunchError: With the exit code, the command and the last output lines.
    """
    print("+ " + shlex.join(cmd), flush=True)
    full_env = {**os.environ, **(env or {})}
    tail: deque[str] = deque(maxlen=tail_lines)
    proc = _start(cmd, cwd, full_env)
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

    parallel, gpus = stage["parallel"], stage["gpus"]
    if parallel not in _GPU_MODES:
        return []
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    errors = []
    if have < gpus:
        errors.append(f"parallel `{parallel}` asks for {gpus} GPU(s) per node but {have} CUDA device(s) are visible: "
                      "lower `gpus`, fix CUDA_VISIBLE_DEVICES, or train on CPU in this profile "
                      "(`gpus 0` with `parallel none` or `ddp`)")
    if parallel == "zero3" and importlib.util.find_spec("deepspeed") is None:
        errors.append("parallel `zero3` needs DeepSpeed: `pip install 'trl[deepspeed]'` (or pick `fsdp2`)")
    return errors


def _check_rollout(stage: dict) -> list[str]:
    rollout = stage["rollout"]
    engine = rollout.split()[0] if isinstance(rollout, str) else rollout.get("engine")
    if engine == "transformers":
        return [] if importlib.util.find_spec("transformers") else ["rollout `transformers` needs transformers"]
    if engine == "vllm":
        import torch

        errors = []
        if importlib.util.find_spec("vllm") is None:
            errors.append("rollout `vllm` needs vLLM, which pins its own torch/transformers: install it in a "
                          "separate environment (`pip install 'craft[vllm]'`) or use `rollout transformers`")
        if not torch.cuda.is_available():
            errors.append("rollout `vllm` needs a CUDA GPU and none is visible: run this stage on a GPU machine "
                          "(see its launch.sh) or use `rollout transformers` in this profile")
        return errors
    return [f"unknown rollout engine `{engine}` (choose `transformers` or `vllm`)"]


def preflight(stage: dict, model_dir=None) -> None:
    """Check in seconds that a stage can start here, collecting every problem.

    Checks that the model's config loads (locally, no download), that the GPUs the
    parallel mode asks for are visible (and DeepSpeed for `zero3`), and that the rollout
    engine imports (vLLM only when the stage asks for it).

    Args:
        stage: Stage settings (`parallel`, `gpus`, `rollout` are read).
        model_dir: Local model dir or a cached hub id (None: not built yet, not checked).

    Raises:
        PreflightError: Naming each problem and its fix.
    """
    errors = (_check_model(model_dir) if model_dir is not None else []) + _check_devices(stage) + _check_rollout(stage)
    if errors:
        raise PreflightError("preflight failed:\n  " + "\n  ".join(errors))
