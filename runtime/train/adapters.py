"""LoRA for both trainers: the plan's PEFT config, parameter counts and the merge step.

A stage with ``lora { ... }`` has ``stages/<stage>/peft_config.json`` in its plan: the
``LoraConfig`` keyword arguments, passed through unchanged. The trainer then trains
and checkpoints the adapter only; at the end it saves the adapter to ``OUT/adapter``
and runs the merge step, which loads the base model again, applies the saved adapter,
folds it into the weights (PEFT's ``merge_and_unload``) and saves an ordinary model
directory to ``OUT/final``, the directory every later step (GRPO, eval, export) reads.
Merging from the saved files, not from the trained model in memory, gives the same
result on one CPU and under FSDP or ZeRO-3, where the weights in memory are shards.

A GRPO stage after a LoRA SFT stage starts from that merged model; with a ``lora``
block of its own it trains a fresh adapter on top, merged the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from craftc.atomic import staged_dir

__all__ = ["AdapterError", "read_peft_config", "lora_config", "parameter_counts", "merge_adapter",
           "has_full_weights"]

PEFT_CONFIG = "peft_config.json"


class AdapterError(ValueError):
    """The plan's PEFT config cannot be used here; the message names the file and the fix."""


def read_peft_config(plan_dir: str | os.PathLike, stage: str) -> dict | None:
    """The stage's ``LoraConfig`` kwargs from the plan dir, or None when it trains every weight."""
    path = Path(plan_dir) / "stages" / stage / PEFT_CONFIG
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise AdapterError(f"`{path}` is not valid JSON ({exc}); recompile the recipe") from None


def lora_config(kwargs: dict):
    """``peft.LoraConfig(**kwargs)``, with a clear message when PEFT is missing or too old."""
    try:
        from peft import LoraConfig
    except ImportError:
        raise AdapterError("the plan trains a LoRA adapter (`lora { ... }`) and PEFT is not installed: "
                           "`pip install peft`") from None
    try:
        return LoraConfig(**kwargs)
    except TypeError as exc:
        raise AdapterError(f"the plan's {PEFT_CONFIG} does not fit this PEFT version: {exc}; "
                           "install peft>=0.17 (target_parameters) or recompile the recipe") from None


def parameter_counts(model) -> dict:
    """``{"trainable_parameters", "total_parameters"}`` of a (PEFT-wrapped) model."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return {"trainable_parameters": int(trainable), "total_parameters": int(total)}


def has_full_weights(model_dir: str | os.PathLike) -> bool:
    """True for a model directory, False for an adapter-only one (``adapter_config.json``)."""
    return (Path(model_dir) / "config.json").is_file() and not (Path(model_dir) / "adapter_config.json").is_file()


def merge_adapter(base_dir: str | os.PathLike, adapter_dir: str | os.PathLike, out_dir: str | os.PathLike,
                  tokenizer=None) -> Path:
    """Fold a saved adapter into its base model and save the result to ``out_dir`` atomically.

    Example (not run here: needs a trained adapter and its base model)::

        merge_adapter("sft/base", "sft/craft/adapter", "sft/craft/final")   # -> Path("sft/craft/final")
    """
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(base_dir), local_files_only=True)
    merged = PeftModel.from_pretrained(base, str(adapter_dir), local_files_only=True).merge_and_unload()
    # Atomic: the trainers merge into a run dir that a launch by hand writes directly.
    with staged_dir(out_dir) as tmp:
        merged.save_pretrained(str(tmp))
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp))
    return Path(out_dir)
