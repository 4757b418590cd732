"""The `sft` step: build or locate the base model, then Stage I SFT for each arm.

Two models come out of this step, trained with the same accepted data, the same
settings and the same budget:

* ``craft``: schema-stripped input (the recipe's Stage I), and
* ``stuffed``: the schema-stuffed baseline (full DDL and API docs in every prompt),

so the eval step compares input modes and nothing else. Training runs through
``accelerate launch`` with the accelerate config and TRL settings the compiler
emitted into the plan dir; the command is printed before it runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from craftc.ir import ModelSpec, Stage
from runtime.step_context import StepContext, StepError, StepResult

__all__ = ["run_sft_step", "sft_stage", "base_model_dir", "stage_settings"]

ARMS = (("craft", "stripped"), ("stuffed", "stuffed"))


def sft_stage(ctx: StepContext) -> Stage:
    stages = [s for s in ctx.plan.recipe.stages if s.kind == "sft"]
    if not stages:
        raise StepError(f"recipe `{ctx.plan.recipe.name}` has no `stage ... {{ }}` of kind sft; "
                        "add `stage sft { base tiny_moe }` to the recipe")
    return stages[0]


def _model_spec(ctx: StepContext, stage: Stage) -> ModelSpec:
    for spec in ctx.plan.recipe.models:
        if spec.name == stage.base:
            return spec
    return ModelSpec(name=stage.base, source="tiny_moe")


def base_model_dir(ctx: StepContext, stage: Stage, corpus: Path) -> Path:
    """The embedded tiny_moe is built from the recipe's corpus; real bases are located."""
    from runtime.train.tiny_moe import build_tiny_moe

    spec = _model_spec(ctx, stage)
    if spec.source == "tiny_moe":
        texts = corpus.read_text(encoding="utf-8").split("\n\n")
        fields = ("hidden", "layers", "heads", "kv_heads", "experts", "top_k", "intermediate",
                  "vocab", "context", "seed")
        settings = {f: getattr(spec, f) for f in fields}
        settings["seed"] = spec.seed + ctx.seed
        ctx.console.print(f"building tiny_moe base ({settings['hidden']} hidden, {settings['layers']} layers, "
                          f"{settings['experts']} experts) with a tokenizer trained on the recipe corpus")
        return build_tiny_moe(ctx.out_dir / "base", texts, settings)
    path = Path(spec.path or spec.name)
    if spec.source == "path" and not (path / "config.json").exists():
        raise StepError(f"base model `{spec.name}`: no model directory at `{path}` (config.json missing); "
                        "point the profile's `model { path \"...\" }` at a saved Hugging Face model dir")
    return path


def stage_settings(trl_kwargs: dict, stage: Stage) -> dict:
    """The SFT trainer's stage settings, taken from the plan's `trl_config.json`."""
    return {
        "epochs": trl_kwargs["num_train_epochs"],
        "max_steps": trl_kwargs["max_steps"],
        "lr": trl_kwargs["learning_rate"],
        "warmup_ratio": trl_kwargs.get("warmup_steps", 0.0),
        "per_device_batch": trl_kwargs["per_device_train_batch_size"],
        "grad_accum": trl_kwargs["gradient_accumulation_steps"],
        "max_length": trl_kwargs.get("max_length", stage.max_length),
        "seed": trl_kwargs["seed"],
        "logging_steps": trl_kwargs["logging_steps"],
        "save_steps": trl_kwargs["save_steps"],
    }


def example_lengths(model_dir: Path, dataset_dir: Path) -> list[int]:
    """Tokens of each conversation, rendered with the model's own chat template."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    rows = load_from_disk(str(dataset_dir))["messages"]
    return [len(tokenizer.apply_chat_template(m, tokenize=True, return_dict=True)["input_ids"]) for m in rows]


def token_matched_steps(stripped_tokens: int, stuffed_lengths: list[int], examples_per_step: int) -> int:
    """Optimiser steps that give the stuffed arm the stripped arm's training tokens.

    Example:
        >>> token_matched_steps(100_000, [5_000] * 10, 4)
        5
    """
    mean = sum(stuffed_lengths) / max(len(stuffed_lengths), 1)
    return max(1, round(stripped_tokens / (mean * examples_per_step)))


def arm_max_length(stage_max: int, context: int, longest: int, longest_stripped: int) -> int:
    """The stripped arm keeps the recipe's `max_length`; the stuffed arm gets the same
    room for the conversation plus the extra tokens its schema-stuffed prompt takes, so
    both arms train on the same content (capped by the model's context)."""
    overhead = max(longest - longest_stripped, 0)
    return min(max(stage_max, 1) + overhead, context)


def _num_processes(accelerate_yaml: Path) -> int:
    import yaml

    data = yaml.safe_load(accelerate_yaml.read_text(encoding="utf-8")) or {}
    return int(data.get("num_processes", 1))


def run_sft_step(ctx: StepContext) -> StepResult:
    from runtime.train.launch import accelerate_command, preflight, run_launch

    stage = sft_stage(ctx)
    data_dir = ctx.input_dir("dataset") / "dataset"
    model_dir = base_model_dir(ctx, stage, data_dir / "corpus.txt")
    trl_kwargs = json.loads(ctx.artifact(f"stages/{stage.name}/trl_config.json").read_text(encoding="utf-8"))
    accelerate_yaml = ctx.artifact(f"stages/{stage.name}/accelerate.yaml")
    settings = stage_settings(trl_kwargs, stage)
    preflight({**settings, "gpus": stage.gpus, "rollout": "transformers"}, model_dir)

    metrics: dict = {"base_model": str(model_dir.relative_to(ctx.out_dir)) if model_dir.is_relative_to(ctx.out_dir)
                     else stage.base}
    context = _model_spec(ctx, stage).context
    lengths = {mode: example_lengths(model_dir, data_dir / mode) for _, mode in ARMS}
    longest = {mode: max(values, default=0) for mode, values in lengths.items()}
    budget = ctx.plan.recipe.eval.baseline_budget
    metrics["baseline_budget"] = budget
    processes = _num_processes(accelerate_yaml)
    for arm, mode in ARMS:
        arm_settings = dict(settings)
        if arm == "stuffed" and budget == "tokens":
            per_step = settings["per_device_batch"] * settings["grad_accum"] * processes
            arm_settings["max_steps"] = token_matched_steps(metrics["craft"]["num_tokens"],
                                                            lengths[mode], per_step)
            metrics["stuffed_max_steps"] = arm_settings["max_steps"]
            ctx.console.print(f"stuffed baseline: {arm_settings['max_steps']} steps, the stripped arm's "
                              f"{metrics['craft'].get('num_tokens', 0):,} training tokens (baseline_budget tokens)")
        max_length = arm_max_length(settings["max_length"], context, longest[mode], longest["stripped"])
        metrics[f"{arm}_longest_example_tokens"] = longest[mode]
        metrics[f"{arm}_max_length"] = max_length
        if longest[mode] > max_length:
            ctx.console.print(f"[yellow]![/] {arm}: the longest example has {longest[mode]} tokens, "
                              f"more than max_length {max_length}; TRL truncates it (keeping the start)")
        out_dir = ctx.out_dir / arm
        config = {"model_dir": str(model_dir), "dataset_dir": str(data_dir / mode), "out_dir": str(out_dir),
                  "stage": {**arm_settings, "max_length": max_length}}
        config_path = ctx.out_dir / f"{arm}_config.json"
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        cmd = accelerate_command(accelerate_yaml, processes, "runtime.train.sft", config_path)
        ctx.console.print(f"[bold]{arm}[/] ({mode} input): {' '.join(cmd)}")
        run_launch(cmd, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
        summary_path = out_dir / "sft_summary.json"
        if not summary_path.is_file():
            # The stuffed arm's budget is computed from this summary: never guess it.
            raise StepError(f"SFT of the `{arm}` arm finished without {summary_path}; "
                            f"rerun `craftc run {ctx.plan_dir} --only sft`")
        metrics[arm] = json.loads(summary_path.read_text(encoding="utf-8"))
        # Paths in the config are machine-specific; keep the record, relative to the step dir.
        config["model_dir"], config["dataset_dir"], config["out_dir"] = (
            "base" if model_dir.is_relative_to(ctx.out_dir) else stage.base, f"dataset/{mode}", arm)
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return StepResult(metrics=metrics, outputs=("craft/final", "stuffed/final"))
