"""Plan diffs: compute what differs between two plans as data, then render it."""

from craftc.diff.compute import diff_plans
from craftc.diff.classify import CATEGORIES, classify_schema, schema_verdict
from craftc.diff.model import (
    AttributeChange, FileChange, Impact, PlanDiff, Rename, ResourceChange, RunCost, SchemaChange, StepRerun,
)
from craftc.diff.render import plan_line, retrain_line, verdict_line, render_json, render_markdown, render_text
from craftc.diff.reruns import predict_reruns, with_run_costs
from craftc.diff.sources import (
    CompileFailed, DiffInputError, PlanSide, load_rev_side, load_side, read_plan_dir, recipe_at_rev,
)

__all__ = [
    "diff_plans", "AttributeChange", "FileChange", "Impact", "PlanDiff", "Rename", "ResourceChange", "RunCost",
    "SchemaChange", "StepRerun", "CATEGORIES", "classify_schema", "schema_verdict", "plan_line", "retrain_line",
    "verdict_line", "render_json", "render_markdown", "render_text", "predict_reruns", "with_run_costs",
    "CompileFailed", "DiffInputError", "PlanSide", "load_rev_side", "load_side", "read_plan_dir", "recipe_at_rev",
    "diff_sides",
]


def diff_sides(before: PlanSide, after: PlanSide) -> PlanDiff:
    """Diff two loaded plan sides."""
    return diff_plans(before.plan, after.plan, before.files, after.files, before.label, after.label)
