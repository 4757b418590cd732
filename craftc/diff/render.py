"""Render a :class:`PlanDiff` as terminal text, Markdown (a pull-request comment) or JSON.

Every form leads with the decision, then the detail, in this order:

1. the verdict: the schema change's class, whether the model is retrained and why;
2. what reruns: the run steps the change invalidates and which are reused, with the
   previous run's wall time when ``--run-dir`` is given (SQLMesh's backfill cost);
3. the impact: each schema change with its class, the workflows it reaches, the fix;
4. the changes per object, in the recipe's own terms (terraform's nested blocks,
   ``old -> new``, ``# (N unchanged attributes hidden)``), renames as one line;
5. the text diffs of the prompts and solutions.

By default the listing stays short: binding-only changes are summarised, long text
diffs are cut, derived artifacts are only named. ``full=True`` (``--full``) adds the
exhaustive listing instead: every attribute and every file diff. The Markdown form
keeps the decision in the open and folds the rest in ``<details>`` (as Atlantis
does), capped in length with a note pointing at ``--full``. JSON always holds
everything.
"""

from __future__ import annotations

import json

from craftc.diff.craft_lines import object_blocks, subject
from craftc.diff.decision import (
    arms_line, cost_line, impact_entries, impact_header, rerun_rows, retrain_line, verdict_line,
)
from craftc.diff.model import FileChange, PlanDiff
from craftc.diff.render_full import file_lines, impact_reach_lines, resource_lines, used_actions

__all__ = ["render_text", "render_markdown", "render_json", "plan_line", "verdict_line", "retrain_line",
           "MARKDOWN_CAP"]

_SYMBOL = {"add": "+", "change": "~", "remove": "-"}
_LEGEND = {"add": "add", "change": "change in place", "remove": "remove"}
# GitHub colours diff lines by their first column: `!` is its "changed" colour.
_MARKDOWN_SYMBOL = {"add": "+", "change": "!", "remove": "-"}

CHANGE_LIST_LINES = 80          # default text: the object list is cut after this many lines
FILE_DIFF_LINES = 10            # default: lines of each prompt or solution diff shown
MARKDOWN_CAP = 20_000           # default Markdown: characters before folded sections are left out
_REVIEWED_TEXT = ("prompts/", "solutions/")   # what a reviewer reads line by line; the rest is derived


def plan_line(diff: PlanDiff) -> str:
    """``Plan: N to add, N to change, N to remove.``"""
    c = diff.counts
    return f"Plan: {c.get('add', 0)} to add, {c.get('change', 0)} to change, {c.get('remove', 0)} to remove."


def _verdict_lines(diff: PlanDiff) -> list[str]:
    return [verdict_line(diff) or "Schema change: none", *filter(None, [retrain_line(diff), arms_line(diff)]),
            plan_line(diff)]


def _rerun_lines(diff: PlanDiff) -> list[str]:
    if not diff.reruns:
        return []
    lines = ["What reruns (the inputs `craftc run` hashes for each step):"]
    for status, step, why, wall in rerun_rows(diff):
        line = f"  {status:<7} {step:<8}" + (f" {wall:>8}" if diff.cost else "") + (f"  {why}" if why else "")
        lines.append(line.rstrip())
    return lines + [cost_line(diff)]


def _impact_lines(diff: PlanDiff, full: bool) -> list[str]:
    if not diff.schema_changes:
        return []
    lines = [impact_header(diff) + ":"]
    for category, what, notes in impact_entries(diff, full):
        lines.append(f"  {category:<13} {what}")
        if notes:
            lines.append(f"  {'':<13}   {notes}")
    return lines


def _legend(diff: PlanDiff, symbols: dict[str, str]) -> str:
    used = [f"{symbols[a]} {_LEGEND[a]}" for a in used_actions(diff)]
    if diff.renames:
        used.append("=> rename")
    return ", ".join(used)


def _change_lines(diff: PlanDiff, symbols: dict[str, str], cap: int | None) -> list[str]:
    lines: list[str] = []
    blocks = object_blocks(diff, symbols)
    for shown, block in enumerate(blocks):
        if cap is not None and len(lines) + len(block) > cap:
            lines.append(f"  ... and {len(blocks) - shown} more objects (`--full` lists them)")
            break
        lines += [f"  {line}" for line in block]
    return lines


def _counts(change: FileChange) -> str:
    body = [line for line in change.unified.splitlines() if not line.startswith(("---", "+++"))]
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    return f"{change.path} (+{added} -{removed})" if change.unified else f"{change.path} ({change.action})"


def _reviewed(change: FileChange) -> bool:
    return change.path.startswith(_REVIEWED_TEXT) and bool(change.unified)


def _short_diff(change: FileChange) -> list[str]:
    body = [line for line in change.unified.splitlines() if not line.startswith(("---", "+++"))]
    shown = body[:FILE_DIFF_LINES]
    if len(body) > len(shown):
        shown.append(f"... {len(body) - len(shown)} more lines (`--full` shows them)")
    return shown


def _wrap(prefix: str, items: list[str], width: int = 100) -> list[str]:
    lines, current = [], prefix
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else "")
        if len(current) + len(piece) > width and current.strip():
            lines.append(current.rstrip())
            current = "    "
        current += piece
    return lines + [current.rstrip()]


def _text_diff_lines(diff: PlanDiff) -> list[str]:
    reviewed = [f for f in diff.files if _reviewed(f)]
    derived = [f for f in diff.files if not _reviewed(f)]
    lines = []
    if reviewed:
        lines.append("Text diffs of the prompts and solutions:")
        for change in reviewed:
            lines += [f"  {_SYMBOL[change.action]} {change.path}"] + [f"    {line}" for line in _short_diff(change)]
    if derived:
        lines += _wrap("Also changed (derived from the above; `--full` shows the diffs): ",
                       [_counts(f) for f in derived])
    return lines


def _sections(*parts: list[str]) -> list[str]:
    lines: list[str] = []
    for part in parts:
        if part:
            lines += part + [""]
    return lines


def render_text(diff: PlanDiff, full: bool = False) -> str:
    """The terminal form (plain text; colour is added by the CLI on a TTY)."""
    lines = [f"craftc diff {diff.before} -> {diff.after}", ""]
    if diff.same:
        lines += ["No changes: the two plans are identical.", "", plan_line(diff)]
        return "\n".join(lines) + "\n"
    lines += _sections(_verdict_lines(diff), _rerun_lines(diff), _impact_lines(diff, full))
    if full:
        if diff.impacts:
            lines += ["What each changed entity and metric reaches:"] + impact_reach_lines(diff, "  ") + [""]
        lines += ["Changes (" + _legend(diff, _SYMBOL) + "):"]
        for resource in diff.resources:
            lines += [""] + resource_lines(resource, _SYMBOL, "  ")
        for rename in diff.renames:
            lines.append(f"  # {subject(rename.old)} => {rename.new.rsplit('.', 1)[-1]} (renamed: removed and added above)")
        lines.append("")
        if diff.files:
            lines += ["Changed files:"] + file_lines(diff, _SYMBOL) + [""]
    else:
        lines += _sections(["Changes (" + _legend(diff, _SYMBOL) + "):"]
                           + _change_lines(diff, _SYMBOL, CHANGE_LIST_LINES),
                           _text_diff_lines(diff))
    lines.append(plan_line(diff))
    return "\n".join(lines) + "\n"


def _md_reruns(diff: PlanDiff) -> list[str]:
    if not diff.reruns:
        return []
    head = "| step | status | wall time | why |" if diff.cost else "| step | status | why |"
    lines = ["#### What reruns", "", head, "|---|---|---|---|" if diff.cost else "|---|---|---|"]
    for status, step, why, wall in rerun_rows(diff):
        cells = [f"`{step}`", f"**{status}**" if status == "rerun" else status] + ([wall] if diff.cost else []) + [why]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines + ["", cost_line(diff)]


def _md_impact(diff: PlanDiff, full: bool) -> list[str]:
    if not diff.schema_changes:
        return []
    lines = [f"#### {impact_header(diff)}", ""]
    for category, what, notes in impact_entries(diff, full):
        lines.append(f"- `{category}` {what}" + (f"; {notes}" if notes else ""))
    return lines


def _details(summary: str, body: list[str]) -> list[str]:
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]


def _md_folded(diff: PlanDiff, full: bool) -> list[list[str]]:
    """The folded sections, in order: the changes per object, then one per changed file."""
    sections = []
    if full:
        body = ["```diff"]
        for resource in diff.resources:
            body += resource_lines(resource, _MARKDOWN_SYMBOL, "")
        body.append("```")
    else:
        body = ["```diff"] + [line[2:] for line in _change_lines(diff, _MARKDOWN_SYMBOL, None)] + ["```"]
    legend = _legend(diff, _MARKDOWN_SYMBOL)
    sections.append(_details(f"Changes per object ({len(diff.resources)}; {legend})", body))
    for change in diff.files:
        title = f"<code>{_MARKDOWN_SYMBOL[change.action]} {change.path}</code>"
        if not change.unified:
            sections.append([f"- {title}"])
            continue
        if not full and not _reviewed(change):
            sections.append([f"- {title} (derived; `--full` shows the diff)"])
            continue
        text = change.unified.rstrip("\n") if full else "\n".join(_short_diff(change))
        sections.append(_details(title, ["```diff", text, "```"]))
    return sections


def render_markdown(diff: PlanDiff, full: bool = False, command: str = "craftc diff A B") -> str:
    """A pull-request comment: the decision in the open, the detail folded, capped unless ``full``."""
    lines = [f"### craft plan diff: `{diff.before}` → `{diff.after}`", ""]
    if diff.same:
        lines += [f"**{plan_line(diff)}**", "", "No changes: the two plans are identical."]
        return "\n".join(lines) + "\n"
    lines += [f"**{line}**  " for line in _verdict_lines(diff)] + [""]
    for part in (_md_reruns(diff), _md_impact(diff, full)):
        if part:
            lines += part + [""]
    left_out = 0
    for section in _md_folded(diff, full):
        if not full and len("\n".join(lines + section)) > MARKDOWN_CAP:
            left_out += 1
            continue
        lines += section + [""]
    if left_out:
        lines += [f"_{left_out} more sections left out to keep this comment short; "
                  f"`{command} --full --format markdown` shows everything._", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_json(diff: PlanDiff) -> str:
    """The JSON twin: every field of the diff, sorted keys, with the verdict and rerun sentences."""
    data = diff.to_dict()
    data["plan"] = plan_line(diff)
    data["verdict_line"] = verdict_line(diff)
    data["retrain_line"] = retrain_line(diff)
    data["arms_line"] = arms_line(diff)
    data["retrain"] = any(r.rerun for r in diff.reruns if r.step in ("sft", "grpo"))
    data["cost_line"] = cost_line(diff) if diff.reruns else ""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
