"""The exhaustive listing behind ``craftc diff --full``: every attribute and every file diff.

Each changed resource is a block of its flattened attributes (``+``/``~``/``-``, null
values included, unchanged ones counted), each changed artifact its whole unified
diff, each schema change its own line, each touched entity or metric what it reaches.
"""

from __future__ import annotations

import json
from typing import Any

from craftc.diff.model import PlanDiff, ResourceChange

__all__ = ["resource_lines", "impact_reach_lines", "file_lines", "used_actions"]


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def resource_lines(resource: ResourceChange, symbols: dict[str, str], indent: str) -> list[str]:
    """One resource with every changed attribute, as ``key: old -> new``."""
    lines = [f"{indent}{symbols[resource.action]} {resource.address} {{"]
    for attr in resource.attributes:
        symbol = symbols[attr.action]
        if attr.action == "change":
            lines.append(f"{indent}    {symbol} {attr.key}: {_value(attr.old)} -> {_value(attr.new)}")
        else:
            shown = attr.new if attr.action == "add" else attr.old
            lines.append(f"{indent}    {symbol} {attr.key}: {_value(shown)}")
    if resource.unchanged:
        lines.append(f"{indent}      # ({resource.unchanged} unchanged attributes hidden)")
    lines.append(f"{indent}  }}")
    return lines


def used_actions(diff: PlanDiff) -> list[str]:
    used = {r.action for r in diff.resources} | {a.action for r in diff.resources for a in r.attributes}
    used |= {f.action for f in diff.files}
    return [action for action in ("add", "change", "remove") if action in used]


def impact_reach_lines(diff: PlanDiff, indent: str) -> list[str]:
    """What each changed entity or metric reaches: workflows, metrics, prompts, bindings, stages."""
    lines = []
    for impact in diff.impacts:
        lines.append(f"{indent}{impact.address} touches:")
        for label in ("workflows", "metrics", "prompts", "bindings", "stages"):
            values = getattr(impact, label)
            lines.append(f"{indent}  {label + ':':<11}{', '.join(values) if values else '(none)'}")
    return lines


def file_lines(diff: PlanDiff, symbols: dict[str, str]) -> list[str]:
    """Every changed artifact with its whole unified diff."""
    lines = []
    for change in diff.files:
        lines += ["", f"  {symbols[change.action]} {change.path}"]
        lines += change.unified.splitlines()
    return lines
