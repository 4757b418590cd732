"""Training data a run loses without failing: skipped references and emptied workflows.

The gate skips an instance turn whose reference solution raises or returns no rows
(there is nothing to compare candidates with), and a workflow can end the gate or the
dataset step with no accepted trajectory at all (every candidate rejected, often by a
judge that rejects the reference's own plan). Either way the model never trains on
that workflow. Each such loss is a warning on the console and in ``funnel.md``, naming
the workflow, the turn, the reason and the fix; with the recipe setting
``on_loss error`` it fails the step instead.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from rich.markup import escape

from runtime.layout import FUNNEL_MD
from runtime.step_context import StepError

__all__ = ["Loss", "gate_losses", "dataset_losses", "report_losses", "losses_markdown"]

_FUNNEL = FUNNEL_MD.under("RUN_DIR").as_posix()

PREFLIGHT = "`craftc check --preflight RECIPE` runs every reference through the gates before any teacher is called"


@dataclass(frozen=True)
class Loss:
    """One workflow (or one turn of it) that lost training data, why, and what fixes it."""

    workflow: str
    turn: int | None         # 1-based; None for the whole workflow
    reason: str
    fix: str

    @property
    def where(self) -> str:
        return f"workflow `{self.workflow}`" + (f" turn {self.turn}" if self.turn else "")

    def line(self) -> str:
        return f"{self.where}: {self.reason}; fix: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _train_workflows(instances: list[dict]) -> list[str]:
    return sorted({i["workflow"] for i in instances if i["split"] == "train"})


def gate_losses(instances: list[dict], candidates: list[dict], outcomes: list[dict],
                skipped_turns: list[dict]) -> list[Loss]:
    """Skipped references (grouped per workflow, turn and reason) and workflows with nothing accepted.

    ``skipped_turns``: ``{"workflow", "turn" (0-based), "reason"}`` per skipped instance turn.
    """
    train_per_workflow = Counter(i["workflow"] for i in instances if i["split"] == "train")
    skipped: dict[tuple[str, int, str], int] = Counter()
    for s in skipped_turns:
        skipped[(s["workflow"], s["turn"], s["reason"])] += 1
    losses = []
    for (workflow, turn, reason), count in sorted(skipped.items()):
        solution = f"solutions/{workflow}/{turn + 1}.py"
        fix = ("make the reference return rows for every param value (or narrow the params)"
               if "returns no rows" in reason else f"fix the reference solution (plan dir `{solution}`)")
        losses.append(Loss(workflow, turn + 1,
                           f"reference skipped on {count} of {train_per_workflow[workflow]} train "
                           f"instances: {reason}", f"{fix}; {PREFLIGHT}"))
    workflow_of = {c["candidate_id"]: c["workflow"] for c in candidates}
    seen: dict[str, list[dict]] = defaultdict(list)
    for o in outcomes:
        seen[workflow_of[o["candidate_id"]]].append(o)
    skipped_workflows = {s["workflow"] for s in skipped_turns}
    for workflow in _train_workflows(instances):
        judged = seen.get(workflow, [])
        if any(o["accepted"] for o in judged):
            continue
        if not judged:
            fix = ("fix the skipped reference above" if workflow in skipped_workflows
                   else "check that the teacher wrote candidates for it")
            losses.append(Loss(workflow, None, "0 candidates reached the gates, so it has no training data", fix))
            continue
        losses.append(Loss(workflow, None, f"0 of {len(judged)} candidates accepted ({_rejections(judged)})",
                           f"read its rejections in {_FUNNEL}; when a judge rejects "
                           "candidates that follow the reference, it rejects the reference's own "
                           f"plan or code: {PREFLIGHT}"))
    return losses


def _rejections(outcomes: list[dict]) -> str:
    """The most common rejections, naming the judge that rejected and one of its reasons."""
    counts: Counter = Counter()
    example: dict[str, str] = {}
    for o in outcomes:
        failed = [j for j in o.get("judges", []) if not j["passed"]] if o["gate"] == "judge" else []
        for name, reason in ([(f"judge {j['judge']}", j["reason"]) for j in failed]
                             or [(f"gate {o['gate']}/{o['reason_class']}", o["reason"])]):
            counts[name] += 1
            example.setdefault(name, reason[:160])
    return "; ".join(f"rejected by {name} {n}x, e.g. \"{example[name]}\"" for name, n in counts.most_common(2))


def dataset_losses(instances: list[dict], examples: list[dict]) -> list[Loss]:
    """Train workflows that contribute no example to the dataset."""
    present = {e["workflow"] for e in examples}
    return [Loss(w, None, "0 examples in the dataset (no accepted trajectory for its first turn)",
                 f"see {_FUNNEL} for why its candidates were rejected; {PREFLIGHT}")
            for w in _train_workflows(instances) if w not in present]


def report_losses(losses: list[Loss], step: str, on_loss: str, console) -> None:
    """Print each loss as a warning; with ``on_loss error`` fail the step instead."""
    if not losses:
        return
    if on_loss == "error":
        lines = "\n".join(f"  - {loss.line()}" for loss in losses)
        raise StepError(f"{step}: {len(losses)} training-data loss(es) and the recipe sets `on_loss error`:\n"
                        f"{lines}\nfix them, or set `on_loss warn` in the recipe to train without them")
    if console is None:
        return
    for loss in losses:
        console.print(f"[bold yellow]warning[/]: {step}: {escape(loss.line())}")
    console.print(f"[yellow]{step}: {len(losses)} warning(s): the model will not train on what they name "
                  "(`on_loss error` in the recipe makes them fail the run)[/]")


def losses_markdown(losses: list[dict]) -> list[str]:
    """The Warnings section of funnel.md (empty when nothing was lost)."""
    if not losses:
        return []
    lines = ["## Warnings", "", "Training data lost (set `on_loss error` in the recipe to fail the run instead):", ""]
    for loss in losses:
        where = f"workflow `{loss['workflow']}`" + (f" turn {loss['turn']}" if loss["turn"] else "")
        lines.append(f"- **{where}**: {loss['reason']}. Fix: {loss['fix']}.")
    return lines + [""]
