"""Stage I: schema-stripped SFT with TRL's `SFTTrainer`, assistant-only loss.

Shape (setup / train / cleanup, as in torchtune recipes):

1. validate the stage settings, the model dir and the dataset dir, collecting errors;
2. prove the masking on a seeded sample (`mask_report.json`/`.md`) and fail fast if any
   system, user or tool token would be trained;
3. train (resuming from the last `checkpoint-*` in `out_dir` if there is one);
4. save `out_dir/final` (model + tokenizer) atomically, `metrics.jsonl`, `loss.png`
   and `sft_summary.json`.

Runs alone (`python -m runtime.train.sft --config CONFIG.json`) or under
`accelerate launch` with the same arguments; CONFIG.json holds
`{"model_dir", "dataset_dir", "out_dir", "stage": {...}}`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from runtime.train.masking import check_masking, mask_report, write_mask_report

__all__ = ["SFTSetupError", "STAGE_DEFAULTS", "main", "sft_config_from_plan", "train_sft", "validate_stage"]

# Settings the SFT step reads from a plan stage, with the defaults a recipe leaves implicit.
STAGE_DEFAULTS = {
    "epochs": 3, "lr": 3e-4, "per_device_batch": 8, "grad_accum": 1, "max_length": 1024, "seed": 0,
    "logging_steps": 10, "save_steps": 500, "max_steps": -1, "warmup_ratio": 0.0,
    "mask_samples": 32, "router_aux_loss_coef": None,
}
# Stage keys that belong to other steps (compiler, launcher); accepted and ignored here.
IGNORED_STAGE_KEYS = {"base", "input", "mask", "parallel", "gpus", "nodes", "mixed_precision", "name",
                      "kind", "from", "rollout", "accelerate_config", "model"}


class SFTSetupError(ValueError):
    """The SFT step cannot start: bad settings, a missing model or dataset."""


def _number(value, kind) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def validate_stage(stage: dict) -> dict:
    """Resolve a stage dict against `STAGE_DEFAULTS`, collecting every error.

    Args:
        stage: The plan's SFT stage settings.

    Returns:
        The resolved settings (defaults filled in, ignored keys dropped).

    Raises:
        SFTSetupError: Listing unknown keys and values of the wrong type or range.

    Example:
        >>> validate_stage({"epochs": 1, "lr": 1e-3})["per_device_batch"]
        8
    """
    errors = [f"unknown stage key `{k}` (known: {', '.join(sorted(STAGE_DEFAULTS))})"
              for k in stage if k not in STAGE_DEFAULTS and k not in IGNORED_STAGE_KEYS]
    s = {**STAGE_DEFAULTS, **{k: v for k, v in stage.items() if k in STAGE_DEFAULTS}}
    for key in ("per_device_batch", "grad_accum", "max_length", "logging_steps", "save_steps", "mask_samples"):
        if not _number(s[key], int) or s[key] < 1:
            errors.append(f"`{key}` must be an integer >= 1, got {s[key]!r}")
    for key in ("seed", "max_steps"):
        if not _number(s[key], int):
            errors.append(f"`{key}` must be an integer, got {s[key]!r}")
    if not _number(s["epochs"], (int, float)) or s["epochs"] <= 0:
        errors.append(f"`epochs` must be a positive number, got {s['epochs']!r}")
    if not _number(s["lr"], (int, float)) or not 0 < s["lr"] < 1:
        errors.append(f"`lr` must be a number in (0, 1), got {s['lr']!r}")
    if not _number(s["warmup_ratio"], (int, float)) or not 0 <= s["warmup_ratio"] < 1:
        errors.append(f"`warmup_ratio` must be in [0, 1), got {s['warmup_ratio']!r}")
    coef = s["router_aux_loss_coef"]
    if coef is not None and (not _number(coef, (int, float)) or coef < 0):
        errors.append(f"`router_aux_loss_coef` must be null or >= 0, got {coef!r}")
    if errors:
        raise SFTSetupError("invalid sft stage:\n  " + "\n  ".join(errors))
    return s


def sft_config_from_plan(stage: dict, out_dir: str | os.PathLike):
    """Build TRL's `SFTConfig` for a plan stage.

    Assistant-only loss is always on: with the tiny_moe template (or any template with
    generation markers) it masks system, user and tool tokens. Without CUDA the config
    runs on CPU in float32 (TRL defaults to bf16 and gradient checkpointing, which a
    CPU cannot use or does not need).

    Args:
        stage: Plan stage settings (see `STAGE_DEFAULTS`).
        out_dir: Where checkpoints go.

    Returns:
        A `trl.SFTConfig`.
    """
    import torch
    from trl import SFTConfig

    s = validate_stage(stage)
    cuda = torch.cuda.is_available()
    return SFTConfig(
        output_dir=str(out_dir),
        num_train_epochs=float(s["epochs"]),
        max_steps=s["max_steps"],
        learning_rate=float(s["lr"]),
        warmup_steps=float(s["warmup_ratio"]),  # transformers 5: a float in [0, 1) is a ratio
        per_device_train_batch_size=s["per_device_batch"],
        gradient_accumulation_steps=s["grad_accum"],
        max_length=s["max_length"],
        seed=s["seed"],
        data_seed=s["seed"],
        logging_steps=s["logging_steps"],
        save_strategy="steps",
        save_steps=s["save_steps"],
        save_total_limit=2,
        assistant_only_loss=True,
        router_aux_loss_coef=s["router_aux_loss_coef"],
        use_cpu=not cuda,
        bf16=cuda and torch.cuda.is_bf16_supported(),
        activation_checkpointing=cuda,  # transformers 5 name; TRL defaults it on
        dataloader_num_workers=0,
        report_to="none",
        disable_tqdm=True,
    )


def _load_inputs(model_dir: Path, dataset_dir: Path):
    """Load tokenizer and dataset with messages naming the missing thing and the fix."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    errors = []
    if not (model_dir / "config.json").is_file():
        errors.append(f"model dir `{model_dir}` has no config.json: run the sft step's base model build "
                      "(tiny_moe) or point `model_dir` at a Hugging Face model directory")
    if not dataset_dir.is_dir():
        errors.append(f"dataset dir `{dataset_dir}` does not exist: run the `dataset` step first")
    if errors:
        raise SFTSetupError("cannot start SFT:\n  " + "\n  ".join(errors))
    try:
        dataset = load_from_disk(str(dataset_dir))
    except Exception as exc:  # datasets raises several types for a corrupt or foreign dir
        raise SFTSetupError(f"dataset dir `{dataset_dir}` is not a saved `datasets.Dataset`: {exc}") from exc
    if "messages" not in dataset.column_names:
        raise SFTSetupError(f"dataset `{dataset_dir}` has no `messages` column (columns: {dataset.column_names})")
    if len(dataset) == 0:
        raise SFTSetupError(f"dataset `{dataset_dir}` is empty: the gate step accepted no trajectory")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    _use_training_template(tokenizer, model_dir)
    # Other columns (workflow, instance_id, n_tokens) are kept for the mask report's ids
    # but never reach the trainer.
    return tokenizer, dataset


def _use_training_template(tokenizer, model_dir: Path) -> None:
    """Give a stock base model the training template TRL would swap in, before the mask report.

    tiny_moe's template already has generation markers. A real base model's stock
    template usually does not; TRL patches known ones inside `SFTTrainer`, so the
    report must render with the same patched template to describe what is trained.
    """
    from trl.chat_template_utils import get_training_chat_template

    if tokenizer.chat_template is None:
        raise SFTSetupError(f"tokenizer in `{model_dir}` has no chat template: conversational SFT needs one")
    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError as exc:
        raise SFTSetupError(
            f"the chat template of `{model_dir}` has no {{% generation %}} markers and TRL has no training "
            f"variant for it, so tool outputs could not be masked. Add the markers around assistant output "
            f"(see docs/training.md). TRL said: {str(exc).splitlines()[0]}") from exc
    if patched is not None:
        tokenizer.chat_template = patched


def _is_main_process() -> bool:
    return os.environ.get("RANK", "0") == "0"


def _write_metrics(log_history: list[dict], out: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".metrics.", dir=out)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for entry in log_history:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
    os.replace(tmp, out / "metrics.jsonl")


def _plot_loss(log_history: list[dict], out: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [(e["step"], e["loss"]) for e in log_history if "loss" in e]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(*zip(*points), marker=".")
    ax.set(xlabel="step", ylabel="train loss", title="Stage I SFT")
    ax.grid(alpha=0.3)
    fd, tmp = tempfile.mkstemp(prefix=".loss.", suffix=".png", dir=out)
    os.close(fd)
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, out / "loss.png")
    return out / "loss.png"


def _save_final(trainer, tokenizer, out: Path) -> Path:
    """Save model + tokenizer to `out/final` through a temporary dir and a rename."""
    tmp = out / ".final.tmp"
    if trainer.is_world_process_zero() and tmp.exists():
        shutil.rmtree(tmp)
    # Every rank calls save_model (FSDP/ZeRO-3 gather the full weights); rank 0 writes.
    trainer.save_model(str(tmp))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(tmp))
        final = out / "final"
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    return out / "final"


def train_sft(model_dir, dataset_dir, out_dir, stage: dict) -> dict:
    """Run Stage I SFT and return a summary (also written to `out_dir/sft_summary.json`).

    Args:
        model_dir: A Hugging Face model directory (e.g. from `build_tiny_moe`).
        dataset_dir: A `Dataset.save_to_disk` dir with a `messages` column.
        out_dir: Checkpoints, `final/`, `mask_report.*`, `metrics.jsonl`, `loss.png`.
        stage: Plan stage settings (see `STAGE_DEFAULTS`).

    Returns:
        `{"first_loss", "last_loss", "steps", "world_size", "train_runtime_s", "num_tokens",
        "tokens_per_s", "resumed_from", "final_dir"}`.

    Raises:
        SFTSetupError: On bad settings or inputs (before anything is trained).
        MaskingError: If any non-assistant token would be trained.
    """
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.trainer_utils import get_last_checkpoint
    from trl import SFTTrainer

    settings = validate_stage(stage)
    model_dir, dataset_dir, out = Path(model_dir), Path(dataset_dir), Path(out_dir)
    tokenizer, dataset = _load_inputs(model_dir, dataset_dir)

    # Fail fast: prove the masking before loading the model or touching out_dir's checkpoints.
    report = mask_report(tokenizer, dataset, n_samples=settings["mask_samples"], seed=settings["seed"])
    out.mkdir(parents=True, exist_ok=True)
    if _is_main_process():
        write_mask_report(report, out)
    check_masking(report)

    args = sft_config_from_plan(stage, out)
    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), local_files_only=True,
        dtype=torch.bfloat16 if args.bf16 else torch.float32)
    trainer = SFTTrainer(model=model, args=args, processing_class=tokenizer,
                         train_dataset=dataset.select_columns(["messages"]))
    resume = get_last_checkpoint(str(out))
    started = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume)
    wall = time.perf_counter() - started
    final = _save_final(trainer, tokenizer, out)

    history = trainer.state.log_history
    losses = [e["loss"] for e in history if "loss" in e]
    tokens = max((e.get("num_tokens", 0) for e in history), default=0)
    summary = {
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "steps": trainer.state.global_step,
        "world_size": trainer.args.world_size,
        "train_runtime_s": round(result.metrics.get("train_runtime", wall), 3),
        "num_tokens": int(tokens),
        "tokens_per_s": round(tokens / wall, 1) if tokens and wall > 0 else None,
        "resumed_from": Path(resume).name if resume else None,
        "final_dir": str(final),
    }
    if trainer.is_world_process_zero():
        _write_metrics(history, out)
        _plot_loss(history, out)
        fd, tmp = tempfile.mkstemp(prefix=".sft_summary.", dir=out)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2, sort_keys=True)
        os.replace(tmp, out / "sft_summary.json")
    if losses and not all(math.isfinite(x) for x in losses):
        raise RuntimeError(f"SFT loss became non-finite ({losses[-1]}); lower `lr` (now {settings['lr']})")
    return summary


def _read_config(path: Path) -> dict:
    if not path.is_file():
        raise SFTSetupError(f"config `{path}` does not exist: pass the sft config JSON the plan emitted")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SFTSetupError(f"config `{path}` is not valid JSON: {exc}") from exc
    missing = [k for k in ("model_dir", "dataset_dir", "out_dir", "stage") if k not in config]
    extra = [k for k in config if k not in ("model_dir", "dataset_dir", "out_dir", "stage")]
    if missing or extra or not isinstance(config.get("stage"), dict):
        raise SFTSetupError(
            f"config `{path}` must hold exactly {{model_dir, dataset_dir, out_dir, stage: {{...}}}}"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; unknown: {', '.join(extra)}" if extra else ""))
    return config


def main(argv: list[str] | None = None) -> int:
    """CLI: `python -m runtime.train.sft --config CONFIG.json` (also under `accelerate launch`)."""
    parser = argparse.ArgumentParser(prog="python -m runtime.train.sft", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="JSON with model_dir, dataset_dir, out_dir, stage")
    ns = parser.parse_args(argv)
    from runtime.train.masking import MaskingError

    try:
        config = _read_config(ns.config)
        summary = train_sft(config["model_dir"], config["dataset_dir"], config["out_dir"], config["stage"])
    except (SFTSetupError, MaskingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if _is_main_process():
        print(json.dumps(summary, sort_keys=True))
    _end_distributed()
    return 0


def _end_distributed() -> None:
    """Leave the process group cleanly: every rank waits for the others, then tears it down.

    Without this a DDP rank may abort at interpreter exit (SIGABRT from a gloo thread
    still running), failing a launch whose training and save had already finished.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
