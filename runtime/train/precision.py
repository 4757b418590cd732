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
- **An MXFP4 checkpoint** (gpt-oss) cannot be trained as it is stored: it is loaded with
  ``Mxfp4Config(dequantize=True)``, which unpacks the experts into ordinary weights.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["load_for_training", "master_dtype", "quantized_load_kwargs"]


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
