"""The part of a plan diff a reviewer decides on: the verdict, what reruns and what it costs, the impact.

These lines lead every rendering (after SQLMesh's plan: directly vs indirectly
modified steps, breaking vs non-breaking, the backfill cost before any detail).
"""

from __future__ import annotations

from craftc.diff.craft_lines import subject
from craftc.diff.model import PlanDiff, SchemaChange, StepRerun
from runtime.runner import UPSTREAM

__all__ = ["verdict_line", "retrain_line", "arms_line", "rerun_rows", "cost_line", "impact_entries", "impact_header",
           "duration"]

TRAINING = ("sft", "grpo")
_DEAREST_FIRST = ("breaking", "additive", "doc-only", "binding-only")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def duration(seconds: float) -> str:
    """``42.0s``, ``3m 12s``, ``1h 02m``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"


def _workflows_of(diff: PlanDiff, category: str) -> list[str]:
    return sorted({w for c in diff.schema_changes if c.category == category for w in c.workflows})


def _trains(diff: PlanDiff) -> bool:
    return any(r.rerun for r in diff.reruns if r.step in TRAINING)


def _shown_the_change(diff: PlanDiff) -> list[str]:
    """The trained arms whose own prompt changed (the stuffed arm's shows the schema's DDL)."""
    return [a.arm for a in diff.arms if a.prompt_changed]


def _retraining(diff: PlanDiff, unused: str) -> str:
    """What a schema change that no workflow's data reads means for training, as the rerun
    table has it: no retraining when sft and grpo are reused, else which arm's prompt changed."""
    if not _trains(diff):
        return f"no retraining needed{unused}"
    shown = _shown_the_change(diff)
    if shown:
        whose = f"the {' and '.join(shown)} arm{'s' if len(shown) > 1 else ''}'{'' if len(shown) > 1 else 's'} prompt"
        return f"{whose} shows the schema, so training reruns"
    return "training reruns"


def verdict_line(diff: PlanDiff) -> str:
    """``Schema change: <class> (<what it means>)``, or "" when the schema did not change.

    What it says of retraining is what the rerun table says (``retrain_line``, ``arms_line``).
    """
    if not diff.verdict:
        return ""
    if diff.verdict == "breaking":
        names = _workflows_of(diff, "breaking")
        reach = f"{_plural(len(names), 'workflow')} {'reads' if len(names) == 1 else 'read'} removed or changed parts"
        meaning = f"retrain: the model learned names that changed; {reach}"
    elif diff.verdict == "additive":
        names = _workflows_of(diff, "additive")
        meaning = (f"distill new data for {_plural(len(names), 'workflow')}; existing data stays valid"
                   if names else f"no workflow uses the new parts yet; {_retraining(diff, ' until one does')}")
    elif diff.verdict == "doc-only":
        meaning = f"docs only; {_retraining(diff, '')}" if _trains(diff) else \
            "no retraining needed; the stuffed baseline's prompt changes"
    else:
        meaning = _retraining(diff, "")
    return f"Schema change: {diff.verdict} ({meaning})"


def arms_line(diff: PlanDiff) -> str:
    """``Arms: ...``: per trained arm, whether its prompt changed, when sft reruns; "" otherwise.

    Every arm of the sft step trains again when it reruns; the line says which arms the change
    itself reaches (the stuffed arm reads the schema in its prompt, the stripped arms do not).
    """
    if not diff.arms or not any(a.retrains for a in diff.arms):
        return ""
    parts = []
    for a in diff.arms:
        if a.prompt_changed:
            parts.append(f"{a.arm} retrains on a changed prompt ({a.prompt})")
        else:
            parts.append(f"{a.arm} retrains on the rerun steps' output, its prompt unchanged ({a.prompt})")
    return "Arms: " + "; ".join(parts)


def _why(r: StepRerun) -> str:
    parts = []
    if r.direct:
        parts.append("changed: " + ", ".join(r.direct))
    if r.upstream:
        parts.append("new output of " + ", ".join(r.upstream))
    return "; ".join(parts)


def retrain_line(diff: PlanDiff) -> str:
    """``Retrain: yes (...)`` or ``Retrain: no (...)`` from the predicted reruns; "" when nothing reruns."""
    if not diff.reruns:
        return ""
    steps = {r.step: r for r in diff.reruns}
    trained = [steps[s] for s in TRAINING if s in steps and steps[s].rerun]
    if not trained:
        return f"Retrain: no ({' and '.join(TRAINING)} are reused)"
    why = "; ".join(f"{r.step}: {_why(r)}" for r in trained)
    return f"Retrain: yes ({why})"


def rerun_rows(diff: PlanDiff) -> list[tuple[str, str, str, str]]:
    """(status, step, why, wall time) per step, in run order."""
    steps = {r.step: r for r in diff.reruns}
    world = steps.get("world")
    rows = []
    for r in diff.reruns:
        if r.rerun:
            why = _why(r)
            if not r.output_changes and r.step != "world":
                why = "reads the rebuilt warehouse file; with the same logical data its output is expected unchanged"
            elif r.step == "world" and not r.output_changes:
                why += " (physical bindings only: the logical data is unchanged)"
        else:
            why = "the world's logical data is unchanged" if world and world.rerun and "world" in UPSTREAM[r.step] else ""
        wall = duration(r.wall_s) if r.wall_s is not None else ""
        rows.append(("rerun" if r.rerun else "reused", r.step, why, wall))
    return rows


def cost_line(diff: PlanDiff) -> str:
    """The recorded wall time of the invalidated steps, or how to get it."""
    reruns = [r.step for r in diff.reruns if r.rerun]
    head = f"{len(reruns)} of {len(diff.reruns)} steps rerun"
    if diff.cost is None:
        return f"Cost: {head}; pass `--run-dir DIR` (a run of the old plan) for the wall time they take."
    cost = diff.cost
    line = (f"Cost: {head}: {duration(cost.wall_s)} of recorded wall time "
            f"(the whole run took {duration(cost.total_s)}; {cost.run_dir})")
    if cost.missing:
        line += f"; not in the run dir: {', '.join(cost.missing)}"
    if cost.other_plan:
        line += "; note: that run was made with another plan than the old side"
    return line


def _names(names: tuple[str, ...], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def impact_entries(diff: PlanDiff, full: bool) -> list[tuple[str, str, str]]:
    """(class, what changed, workflows and fix) per schema change, dearest first.

    Binding-only changes are one summary entry unless ``full``.
    """
    entries = []
    for category in _DEAREST_FIRST:
        changes: list[SchemaChange] = [c for c in diff.schema_changes if c.category == category]
        if category == "binding-only" and not full and changes:
            kinds: dict[str, int] = {}
            for c in changes:
                kind = {"spec": "spec file"}.get(c.change.split(" ")[0], c.change.split(" ")[0])
                kinds[kind] = kinds.get(kind, 0) + 1
            what = ", ".join(_plural(n, k) for k, n in sorted(kinds.items()))
            entries.append((category, f"{_plural(len(changes), 'physical change')} ({what})",
                            "the logical views hide them; listed per entity below"))
            continue
        for c in changes:
            notes = []
            if c.workflows:
                notes.append(f"read by {_names(c.workflows)}" if category != "additive"
                             else f"used by {_names(c.workflows)}")
            elif category == "additive":
                notes.append("no workflow uses it yet")
            if c.fix and category == "breaking":
                notes.append(f"fix: {c.fix}")
            entries.append((category, f"{subject(c.address)}: {c.change}", "; ".join(notes)))
    return entries


def impact_header(diff: PlanDiff) -> str:
    counts = [f"{sum(1 for c in diff.schema_changes if c.category == k)} {k}" for k in _DEAREST_FIRST
              if any(c.category == k for c in diff.schema_changes)]
    return f"Impact ({', '.join(counts)})"
