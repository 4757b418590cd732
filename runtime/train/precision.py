"""How a training step loads its model: the weights' dtype, the device, a quantized checkpoint.

- **Master weights in float32.** ``mixed_precision bf16`` compiles to ``bf16: true`` in the
  TRL config, which makes the Trainer compute under bf16 autocast. The weights the optimizer
  updates must still be float32: a bf16 weight near 1.0 moves in steps of 2**-7, so an Adam
  update of about ``lr`` = 1e-6 rounds away and nothing trains. The one exception is
  DeepSpeed (``parallel zero3``), whose bf16 optimizer keeps float32 master copies itself and
  wants the model in the half type.
- **One process on a GPU** moves the model there before anything runs on it: GRPO measures
  the policy before the trainer exists (the trainer would move it only later), and on the
  CPU that measurement would take minutes for what the GPU does in seconds.
- **bf16 on a CPU** (``mixed_precision bf16`` with ``gpus 0``, ``eval { precision bf16 }``) is
  fast only where the CPU computes bf16 in hardware (the ``amx_bf16`` or ``avx512_bf16``
  flags); elsewhere PyTorch converts it in software, slower than float32, and the steps say
  so on the console (:func:`software_bf16_warning`).
- **An MXFP4 checkpoint** (gpt-oss) cannot be trained as it is stored: it is loaded with
  ``Mxfp4Config(dequantize=True)``, which unpacks the experts into ordinary weights.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["cpu_bf16_flags", "load_for_training", "master_dtype", "quantized_load_kwargs", "software_bf16_warning",
           "warn_software_bf16", "warn_stage_software_bf16"]

# The CPU flags (Linux's /proc/cpuinfo) of bf16 computed in hardware: AMX tiles, AVX-512 BF16.
HARDWARE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def master_dtype(args):
    """The dtype a trained model is loaded in (see the module docstring)."""
    import torch

    if os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true" and (args.bf16 or args.fp16):
        return torch.bfloat16 if args.bf16 else torch.float16
    return torch.float32


def quantized_load_kwargs(model_dir) -> dict:
    """``from_pretrained`` keyword arguments for a quantized checkpoint that training must unpack.

    Example:
        >>> quantized_load_kwargs("/nonexistent")
        {}
    """
    try:
        config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    method = (config.get("quantization_config") or {}).get("quant_method")
    if method == "mxfp4":
        from transformers import Mxfp4Config

        return {"quantization_config": Mxfp4Config(dequantize=True)}
    return {}


def load_for_training(model_dir, args, **kwargs):
    """``AutoModelForCausalLM.from_pretrained`` in the master dtype, unpacked, on the step's device."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=master_dtype(args),
                                                 **quantized_load_kwargs(model_dir), **kwargs)
    device = getattr(args, "device", None)
    if getattr(args, "world_size", 1) == 1 and device is not None and device.type != "cpu":
        model.to(device)
    return model


def cpu_bf16_flags(cpuinfo: str | None = None) -> list[str] | None:
    """The CPU's hardware bf16 flags, or None where ``/proc/cpuinfo`` cannot be read.

    Example:
        >>> cpu_bf16_flags("flags : fpu sse2 avx512f avx512_bf16 amx_tile amx_bf16")
        ['amx_bf16', 'avx512_bf16']
        >>> cpu_bf16_flags("flags : fpu sse2 avx2")
        []
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    words = set(cpuinfo.split())
    return [f for f in HARDWARE_BF16_FLAGS if f in words]


def software_bf16_warning(what: str, cpuinfo: str | None = None) -> str | None:
    """The console warning for bf16 asked of this CPU when it lacks hardware bf16, else None.

    Example:
        >>> software_bf16_warning("sft", "flags : fpu sse2 avx2")[:60]
        'sft: bf16 on a CPU without hardware bf16 (no amx_bf16 or avx'
        >>> software_bf16_warning("sft", "flags : avx512_bf16") is None
        True
    """
    flags = cpu_bf16_flags(cpuinfo)
    if flags is None or flags:
        return None
    return (f"{what}: bf16 on a CPU without hardware bf16 (no {' or '.join(HARDWARE_BF16_FLAGS)} in /proc/cpuinfo): "
            "PyTorch converts it in software, which is slower than float32 here; remove `mixed_precision bf16` "
            "or `eval { precision bf16 }` from the profile for this machine")


def warn_software_bf16(console, what: str) -> None:
    """Print :func:`software_bf16_warning` on ``console`` where this CPU lacks hardware bf16."""
    warning = software_bf16_warning(what)
    if warning:
        console.print(f"[yellow]![/] {warning}")


def warn_stage_software_bf16(ctx, stage) -> None:
    """:func:`warn_software_bf16` for a CPU stage with ``mixed_precision bf16`` that trains here."""
    if stage.gpus == 0 and stage.mixed_precision == "bf16" and ctx.launch:
        warn_software_bf16(ctx.console, f"stage {stage.name}")
