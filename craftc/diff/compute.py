"""Compute a :class:`PlanDiff` from two plans (their ``plan.json`` data and files)."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from typing import Any

from craftc.diff.classify import classify_schema, schema_verdict
from craftc.diff.model import ArmRetrain, AttributeChange, FileChange, Impact, PlanDiff, ResourceChange
from craftc.diff.renames import plan_renames
from craftc.diff.reruns import predict_reruns
from craftc.diff.resources import RESOURCE_KINDS, plan_resources
from runtime.layout import SFT_ARMS

__all__ = ["diff_plans", "diff_resources", "diff_files", "schema_impacts"]

_SKIP_FILES = ("plan.json",)   # its content is the resource summary


def _order(address: str) -> tuple[int, str]:
    kind = address.split(".", 1)[0]
    return (RESOURCE_KINDS.index(kind) if kind in RESOURCE_KINDS else len(RESOURCE_KINDS), address)


def _attribute_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[list[AttributeChange], int]:
    changes, unchanged = [], 0
    for key in sorted(set(old) | set(new)):
        if key not in new:
            changes.append(AttributeChange(key, "remove", old=old[key]))
        elif key not in old:
            changes.append(AttributeChange(key, "add", new=new[key]))
        elif old[key] != new[key]:
            changes.append(AttributeChange(key, "change", old=old[key], new=new[key]))
        else:
            unchanged += 1
    return changes, unchanged


def diff_resources(before: dict, after: dict) -> list[ResourceChange]:
    """Resource-level changes between two ``plan.json`` objects, in display order."""
    old, new = plan_resources(before), plan_resources(after)
    changes = []
    for address in sorted(set(old) | set(new), key=_order):
        if address not in new:
            attrs, _ = _attribute_changes(old[address], {})
            changes.append(ResourceChange(address, "remove", tuple(attrs)))
        elif address not in old:
            attrs, _ = _attribute_changes({}, new[address])
            changes.append(ResourceChange(address, "add", tuple(attrs)))
        else:
            attrs, unchanged = _attribute_changes(old[address], new[address])
            if attrs:
                changes.append(ResourceChange(address, "change", tuple(attrs), unchanged))
    return changes


def _unified(path: str, old: bytes | None, new: bytes | None) -> str:
    try:
        a = old.decode("utf-8").splitlines(keepends=True) if old is not None else []
        b = new.decode("utf-8").splitlines(keepends=True) if new is not None else []
    except UnicodeDecodeError:
        return "(binary file differs)\n"
    lines = difflib.unified_diff(a, b, fromfile=f"a/{path}" if old is not None else "/dev/null",
                                 tofile=f"b/{path}" if new is not None else "/dev/null", n=2)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def diff_files(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> list[FileChange]:
    """Artifacts whose bytes differ, with unified diffs, sorted by path."""
    changes = []
    for path in sorted(set(before) | set(after)):
        if path in _SKIP_FILES:
            continue
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        action = "add" if old is None else "remove" if new is None else "change"
        # Whole added or removed files follow from the resource summary; only edits are shown line by line.
        changes.append(FileChange(path, action, _unified(path, old, new) if action == "change" else ""))
    return changes


def _workflows_reading(recipe: dict, entity: str | None, metric: str | None,
                       metric_entities: Mapping[str, list[str]]) -> set[str]:
    names = set()
    for workflow in recipe.get("workflows", []):
        used_metrics = workflow.get("metrics", [])
        param_entities = {p.get("entity") for p in workflow.get("params", [])}
        if entity and (entity in workflow.get("entities", []) or entity in param_entities
                       or any(entity in metric_entities.get(m, []) for m in used_metrics)):
            names.add(workflow["name"])
        if metric and metric in used_metrics:
            names.add(workflow["name"])
    return names


def _impact_on(address: str, plans: tuple[dict, ...]) -> Impact:
    kind, name = address.split(".", 1)
    workflows, metrics, bindings, stages = set(), set(), set(), set()
    for plan in plans:
        recipe = plan["recipe"]
        metric_entities = {m["name"]: m.get("entities", []) for m in recipe["schema"].get("metrics", [])}
        entity, metric = (name, None) if kind == "entity" else (None, name)
        found = _workflows_reading(recipe, entity, metric, metric_entities)
        workflows |= found
        if entity:
            metrics |= {m for m, ents in metric_entities.items() if entity in ents}
            bindings |= {f"view {e['view']} (sql/binding.sql)" for e in recipe["schema"].get("entities", [])
                         if e["name"] == entity}
        for stage in recipe.get("stages", []):
            # A stage is touched when it trains on an affected workflow or reads the stuffed schema.
            if found or stage.get("input") == "stuffed":
                stages.add(stage["name"])
    return Impact(address=address, workflows=tuple(sorted(workflows)), metrics=tuple(sorted(metrics)),
                  prompts=("prompts/system_stuffed.md", "sql/logical_ddl.sql"),
                  bindings=tuple(sorted(bindings)), stages=tuple(sorted(stages)))


def schema_impacts(resources: list[ResourceChange], before: dict, after: dict) -> list[Impact]:
    """For each changed entity or metric: the workflows, metrics, prompts, bindings and stages it reaches."""
    return [_impact_on(change.address, (before, after)) for change in resources
            if change.address.split(".", 1)[0] in ("entity", "metric")]


def _short_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()[:12]


def _with_solution_edits(resources: list[ResourceChange], files: list[FileChange],
                         before_files: Mapping[str, bytes], after_files: Mapping[str, bytes]) -> list[ResourceChange]:
    """Count an edited reference solution as a change of its workflow.

    The IR only records a solution's path, so an edit of the file itself would
    otherwise change no resource and the plan line would read 0 to change.
    """
    edits: dict[str, list[AttributeChange]] = {}
    for change in files:
        parts = change.path.split("/")
        if change.action == "change" and len(parts) == 3 and parts[0] == "solutions":
            key = f"turns.{parts[2].removesuffix('.py')}.solution_source"
            edits.setdefault(f"workflow.{parts[1]}", []).append(
                AttributeChange(key, "change", old=_short_hash(before_files[change.path]),
                                new=_short_hash(after_files[change.path])))
    out = []
    for resource in resources:
        extra = edits.pop(resource.address, [])
        if extra and resource.action == "change":
            attrs = tuple(sorted(resource.attributes + tuple(extra), key=lambda a: a.key))
            resource = ResourceChange(resource.address, "change", attrs, resource.unchanged)
        out.append(resource)
    out += [ResourceChange(address, "change", tuple(attrs)) for address, attrs in edits.items()]
    return sorted(out, key=lambda r: _order(r.address))


def diff_plans(before: dict, after: dict, before_files: Mapping[str, bytes], after_files: Mapping[str, bytes],
               before_label: str = "before", after_label: str = "after") -> PlanDiff:
    """The whole diff between two plans.

    Args:
        before: The old ``plan.json`` object.
        after: The new ``plan.json`` object.
        before_files: The old plan dir's files (relative path -> bytes).
        after_files: The new plan dir's files.
        before_label: How the old side is named in the output.
        after_label: How the new side is named.

    Returns:
        A :class:`PlanDiff`; ``same`` is true when nothing differs.
    """
    files = diff_files(before_files, after_files)
    resources = _with_solution_edits(diff_resources(before, after), files, before_files, after_files)
    counts = {action: sum(1 for r in resources if r.action == action) for action in ("add", "change", "remove")}
    schema_changes = tuple(classify_schema(before, after, before_files, after_files))
    same = not resources and not files
    reruns = () if same else predict_reruns(before, after)
    return PlanDiff(before=before_label, after=after_label, resources=tuple(resources),
                    files=tuple(files),
                    impacts=tuple(schema_impacts(resources, before, after)),
                    schema_changes=schema_changes, verdict=schema_verdict(schema_changes), counts=counts,
                    renames=tuple(plan_renames(before, after)),
                    reruns=reruns, arms=_arms(after, files, reruns))


def _arms(after: dict, files: list[FileChange], reruns) -> tuple[ArmRetrain, ...]:
    """The arms the new plan's sft step trains (the stuffed one only when eval compares against
    it, as the step decides), and whether each one's prompt file changed."""
    compared = after.get("recipe", {}).get("eval", {}).get("arms", ())
    changed = {f.path for f in files}
    sft = any(r.step == "sft" and r.rerun for r in reruns)
    return tuple(ArmRetrain(arm, mode, f"prompts/system_{mode}.md", f"prompts/system_{mode}.md" in changed, sft)
                 for arm, mode in SFT_ARMS.items() if arm != "stuffed" or "stuffed" in compared)
