"""Distillation: teachers, the Tri-Gate filter, judges, the funnel report and datasets.

Steps (registered with the runner): ``runtime.distill.step:run_distill``,
``run_gate`` and ``run_dataset``. See docs/distill.md.
"""

from runtime.distill.blocks import ParsedTurn, format_answer, format_turn, parse_turn
from runtime.distill.noise import INTENDED_GATE, NOISE_KINDS

__all__ = ["INTENDED_GATE", "NOISE_KINDS", "ParsedTurn", "format_answer", "format_turn", "parse_turn"]
