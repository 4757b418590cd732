"""Training: the embedded tiny MoE base model, masking proofs, Stage I SFT and launches.

Heavy imports (torch, transformers, trl) happen inside the submodules' functions, so
importing this package is cheap.
"""

from runtime.train.masking import MaskingError, check_masking, mask_report, write_mask_report
from runtime.train.tiny_moe import CHAT_TEMPLATE, DEFAULT_SPEC, TinyMoeSpecError, build_tiny_moe

__all__ = [
    "CHAT_TEMPLATE",
    "DEFAULT_SPEC",
    "MaskingError",
    "TinyMoeSpecError",
    "build_tiny_moe",
    "check_masking",
    "mask_report",
    "write_mask_report",
]
