"""Render a :class:`PlanDiff` as terminal text, Markdown (a pull-request comment) or JSON.

The text form follows ``terraform plan``: three-wide ``  +``/``  ~``/``  -`` symbols,
``old -> new`` values, hidden unchanged attributes counted, a legend with only the
symbols used and a last line ``Plan: N to add, N to change, N to remove.``
"""

from __future__ import annotations

import json
from typing import Any

from craftc.diff.model import PlanDiff, ResourceChange

__all__ = ["render_text", "render_markdown", "render_json", "plan_line", "verdict_line"]

_SYMBOL = {"add": "+", "change": "~", "remove": "-"}
_LEGEND = {"add": "add", "change": "change in place", "remove": "remove"}
# GitHub colours diff lines by their first column: `!` is its "changed" colour.
_MARKDOWN_SYMBOL = {"add": "+", "change": "!", "remove": "-"}


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def plan_line(diff: PlanDiff) -> str:
    """``Plan: N to add, N to change, N to remove.``"""
    c = diff.counts
    return f"Plan: {c.get('add', 0)} to add, {c.get('change', 0)} to change, {c.get('remove', 0)} to remove."


def _workflows_of(diff: PlanDiff, category: str) -> list[str]:
    return sorted({w for c in diff.schema_changes if c.category == category for w in c.workflows})


def verdict_line(diff: PlanDiff) -> str:
    """``Schema change: <class> (<what it means>)``, or "" when the schema did not change."""
    if not diff.verdict:
        return ""
    if diff.verdict == "breaking":
        names = _workflows_of(diff, "breaking")
        reach = f"{len(names)} workflow{'s' if len(names) != 1 else ''} read removed or changed parts"
        meaning = f"retrain: the model learned names that changed; {reach}"
    elif diff.verdict == "additive":
        names = _workflows_of(diff, "additive")
        meaning = (f"distill new data for {len(names)} workflow{'s' if len(names) != 1 else ''}; existing data stays valid"
                   if names else "no workflow uses the new parts yet; no retraining needed until one does")
    elif diff.verdict == "doc-only":
        meaning = "no retraining needed; the stuffed baseline's prompt changes"
    else:
        meaning = "no retraining needed"
    return f"Schema change: {diff.verdict} ({meaning})"


def _change_lines(diff: PlanDiff, indent: str) -> list[str]:
    width = max(len(c.category) for c in diff.schema_changes) + 2
    lines = []
    for change in diff.schema_changes:
        lines.append(f"{indent}{change.category:<{width}}{change.address}: {change.change}")
        if change.workflows or change.category == "additive":
            names = ", ".join(change.workflows) or "(none yet)"
            lines.append(f"{indent}{'':<{width}}  workflows: {names}")
        if change.fix and change.category == "breaking":
            lines.append(f"{indent}{'':<{width}}  fix: {change.fix}")
    return lines


def _resource_lines(resource: ResourceChange, symbols: dict[str, str], indent: str) -> list[str]:
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


def _used_actions(diff: PlanDiff) -> list[str]:
    used = {r.action for r in diff.resources} | {a.action for r in diff.resources for a in r.attributes}
    used |= {f.action for f in diff.files}
    return [action for action in ("add", "change", "remove") if action in used]


def _impact_lines(diff: PlanDiff, indent: str) -> list[str]:
    lines = []
    for impact in diff.impacts:
        lines.append(f"{indent}{impact.address} touches:")
        for label in ("workflows", "metrics", "prompts", "bindings", "stages"):
            values = getattr(impact, label)
            lines.append(f"{indent}  {label + ':':<11}{', '.join(values) if values else '(none)'}")
    return lines


def render_text(diff: PlanDiff) -> str:
    """The terminal form (plain text; colour is added by the CLI on a TTY)."""
    lines = [f"craftc diff {diff.before} -> {diff.after}", ""]
    if diff.same:
        lines += ["No changes: the two plans are identical.", "", plan_line(diff)]
        return "\n".join(lines) + "\n"
    lines.append("Actions are shown with these symbols:")
    lines += [f"  {_SYMBOL[a]} {_LEGEND[a]}" for a in _used_actions(diff)]
    lines.append("")
    if diff.resources:
        lines.append("craft will make these changes:")
        for resource in diff.resources:
            lines += [""] + _resource_lines(resource, _SYMBOL, "  ")
        lines.append("")
    if diff.files:
        lines.append("Changed files:")
        for change in diff.files:
            lines += ["", f"  {_SYMBOL[change.action]} {change.path}"]
            lines += change.unified.splitlines()
        lines.append("")
    if diff.impacts:
        lines += ["Impact of the schema changes:"] + _impact_lines(diff, "  ") + [""]
    if diff.schema_changes:
        lines += ["Impact (each schema change and its class):"] + _change_lines(diff, "  ") + [""]
        lines += [verdict_line(diff)]
    lines.append(plan_line(diff))
    return "\n".join(lines) + "\n"


def render_markdown(diff: PlanDiff) -> str:
    """A pull-request comment: summary in a ``diff`` block, file diffs folded, impact as a list."""
    lines = [f"### craft plan diff: `{diff.before}` → `{diff.after}`", "", f"**{plan_line(diff)}**", ""]
    if diff.verdict:
        lines += [f"**{verdict_line(diff)}**", ""]
    if diff.same:
        lines.append("No changes: the two plans are identical.")
        return "\n".join(lines) + "\n"
    if diff.resources:
        lines.append("```diff")
        for resource in diff.resources:
            lines += _resource_lines(resource, _MARKDOWN_SYMBOL, "")
        lines += ["```", ""]
        lines.append("Legend: " + ", ".join(f"`{_MARKDOWN_SYMBOL[a]}` {_LEGEND[a]}" for a in _used_actions(diff)))
        lines.append("")
    if diff.impacts:
        lines += ["#### Impact of the schema changes", ""]
        for impact in diff.impacts:
            parts = [f"{label}: {', '.join(f'`{v}`' for v in getattr(impact, label))}"
                     for label in ("workflows", "metrics", "prompts", "bindings", "stages") if getattr(impact, label)]
            lines.append(f"- `{impact.address}` touches " + "; ".join(parts))
        lines.append("")
    if diff.schema_changes:
        lines += ["#### Impact", "", "| class | change | workflows | fix |", "|---|---|---|---|"]
        for c in diff.schema_changes:
            cells = (f"`{c.category}`", f"`{c.address}`: {c.change}", ", ".join(f"`{w}`" for w in c.workflows),
                     c.fix if c.category == "breaking" else "")
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        lines.append("")
    if diff.files:
        lines += [f"#### Changed files ({len(diff.files)})", ""]
        for change in diff.files:
            title = f"<code>{_MARKDOWN_SYMBOL[change.action]} {change.path}</code>"
            if not change.unified:
                lines.append(f"- {title}")
                continue
            lines += [f"<details><summary>{title}</summary>", "", "```diff", change.unified.rstrip("\n"), "```",
                      "", "</details>", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_json(diff: PlanDiff) -> str:
    """The JSON twin: every field of the diff, sorted keys."""
    data = diff.to_dict()
    data["plan"] = plan_line(diff)
    data["verdict_line"] = verdict_line(diff)
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
