"""Emission: a checked recipe -> the plan dir the runtime executes (docs/plan-dir.md)."""

from craftc.emit.errors import EmitError
from craftc.emit.plan import canonical_json, content_hash, emit_plan, render_plan_files, write_plan_files

__all__ = ["EmitError", "canonical_json", "content_hash", "emit_plan", "render_plan_files", "write_plan_files"]
