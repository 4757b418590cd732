"""Load a compiled plan dir and prove it is the one the compiler wrote.

The runtime never re-reads the recipe: ``plan.json`` is re-validated with the same
pydantic models the compiler used, its content hash is recomputed, and every
artifact is checked against the sha256 recorded at compile time. A plan dir edited
by hand (or half-copied) is refused with a message that says to recompile.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import ValidationError

from craftc.ir import Plan
from runtime.step_context import StepError

__all__ = ["PlanError", "load_plan", "plan_content_hash"]


class PlanError(StepError):
    """The plan dir is missing, corrupt or was modified after compilation."""


def plan_content_hash(plan_data: dict) -> str:
    """sha256 of the canonical JSON of ``plan.json`` without its own hash field."""
    body = {k: v for k, v in plan_data.items() if k != "content_hash"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_plan(plan_dir: Path, verify_artifacts: bool = True) -> Plan:
    """Read and verify ``plan_dir/plan.json``.

    Raises:
        PlanError: naming the problem and the fix (usually: recompile).
    """
    plan_dir = Path(plan_dir)
    plan_file = plan_dir / "plan.json"
    if not plan_dir.is_dir():
        raise PlanError(f"plan dir `{plan_dir}` does not exist; compile one with "
                        "`craftc compile RECIPE -o DIR`")
    if not plan_file.is_file():
        raise PlanError(f"`{plan_file}` is missing: `{plan_dir}` is not a compiled plan dir; "
                        "compile one with `craftc compile RECIPE -o DIR`")
    try:
        data = json.loads(plan_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PlanError(f"`{plan_file}` is not valid JSON ({exc}); recompile the recipe") from None
    if not isinstance(data, dict):
        raise PlanError(f"`{plan_file}` does not hold a plan object; recompile the recipe")
    recorded = data.get("content_hash", "")
    if recorded and recorded != plan_content_hash(data):
        raise PlanError(f"`{plan_file}` was modified after compilation (content hash mismatch); "
                        "recompile the recipe instead of editing the plan")
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PlanError(f"`{plan_file}` does not match this craftc's plan format at `{where}`: "
                        f"{first['msg']}; recompile the recipe with this craftc") from None
    if verify_artifacts:
        for rel, digest in sorted(plan.artifacts.items()):
            path = plan_dir / rel
            if not path.is_file():
                raise PlanError(f"plan artifact `{rel}` is missing from `{plan_dir}`; recompile the recipe")
            if _sha256_file(path) != digest:
                raise PlanError(f"plan artifact `{rel}` in `{plan_dir}` was modified after compilation; "
                                "recompile the recipe instead of editing the plan")
    return plan
