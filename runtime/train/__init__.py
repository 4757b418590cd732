"""Training: the embedded tiny MoE base model, masking proofs, Stage I SFT and launches.

Heavy imports (torch, transformers, trl) happen inside the submodules' functions, so
importing this package is cheap. The trainers (`runtime.train.sft`, `runtime.train.grpo`)
are not imported here: `accelerate launch -m runtime.train.sft` runs them as __main__.
"""

from runtime.train.launch import LaunchError, PreflightError, launch_stage, preflight, run_launch, stage_command
from runtime.train.masking import MaskingError, check_masking, mask_report, write_mask_report
from runtime.train.tiny_moe import CHAT_TEMPLATE, DEFAULT_SPEC, TinyMoeSpecError, build_tiny_moe

__all__ = [
    "CHAT_TEMPLATE",
    "DEFAULT_SPEC",
    "LaunchError",
    "MaskingError",
    "PreflightError",
    "TinyMoeSpecError",
    "build_tiny_moe",
    "check_masking",
    "mask_report",
    "preflight",
    "run_launch",
    "stage_command",
    "launch_stage",
    "write_mask_report",
]
