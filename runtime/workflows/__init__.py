"""Workflows at run time: reference solutions, sampled instances and expectation checks.

``solutions`` renders a reference solution's PLAN and CODE templates for param
values; ``instances`` draws params from the warehouse and renders whole instances and
their train/eval splits; ``expectations`` judges a result DataFrame against a
reference result.
"""

from runtime.workflows.expectations import CheckResult, check_result, normalise_frame
from runtime.workflows.instances import (
    HELD_OUT_KINDS,
    SPLITS,
    Instance,
    InstanceError,
    InstanceTurn,
    ask_slots,
    draw_fresh_instances,
    draw_instances,
    make_instances,
    render_ask,
    sample_params,
    split_instances,
    held_out_kind,
    first_turn_reads,
)
from runtime.workflows.solutions import (
    SolutionError,
    execute_code,
    format_value,
    load_solution_text,
    render_solution,
    split_solution,
    warmup_jobs,
)

__all__ = [
    "ask_slots",
    "warmup_jobs",
    "HELD_OUT_KINDS",
    "SPLITS",
    "held_out_kind",
    "first_turn_reads",
    "CheckResult",
    "Instance",
    "InstanceError",
    "InstanceTurn",
    "SolutionError",
    "check_result",
    "draw_fresh_instances",
    "draw_instances",
    "execute_code",
    "format_value",
    "load_solution_text",
    "make_instances",
    "normalise_frame",
    "render_ask",
    "render_solution",
    "sample_params",
    "split_instances",
    "split_solution",
]
