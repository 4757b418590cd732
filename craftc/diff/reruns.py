"""Which run steps a plan change invalidates, from the runner's own input hashing.

``craftc run`` reuses a step when the hash of the plan parts it reads and of its
upstream steps' outputs is unchanged (:func:`runtime.runner.step_inputs_hash`). This
module asks the runner for each step's plan-part hashes on both plans and propagates
the difference downstream the way the runner carries outputs:

- a step whose plan parts differ reruns, and its output is taken to change;
- the world step hands the steps in ``LOGICAL_READERS`` only its logical data hash, so
  a physical-only change (tables, columns, scales) reruns world but reaches them only
  when the logical part of its inputs changed too;
- a step that reruns only because it reads the rebuilt warehouse file, with nothing
  logical changed, is expected to produce byte-identical output (agent code sees the
  logical views only), so the steps after it are reused.

With a previous run dir, each invalidated step's recorded ``wall_s`` gives the cost.
"""

from __future__ import annotations

import json
from pathlib import Path

from craftc.diff.model import RunCost, StepRerun
from craftc.ir import Plan
from runtime.runner import LOGICAL_READERS, STEPS, UPSTREAM, step_plan_parts

__all__ = ["predict_reruns", "with_run_costs"]


def _as_runner_sees(plan: dict) -> dict:
    """``plan.json`` as the runner hashes it: validated, then dumped as the runner does."""
    return Plan.model_validate(plan).model_dump(mode="json", by_alias=True)


def _changed_parts(step: str, before: dict, after: dict, physical: bool = True) -> tuple[str, ...]:
    old, new = step_plan_parts(step, before, physical), step_plan_parts(step, after, physical)
    return tuple(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))


def predict_reruns(before: dict, after: dict) -> tuple[StepRerun, ...]:
    """For each step, in run order: does a run made with ``before`` rerun it for ``after``?"""
    before, after = _as_runner_sees(before), _as_runner_sees(after)
    world_logical = bool(_changed_parts("world", before, after, physical=False))
    out: dict[str, StepRerun] = {}
    for step in STEPS:
        direct = _changed_parts(step, before, after)
        upstream, logical_upstream = [], False
        for up in UPSTREAM[step]:
            if up == "world":
                # Any rebuild changes the warehouse file; logical readers see only its logical hash.
                changed = out[up].rerun and (step not in LOGICAL_READERS or world_logical)
            else:
                changed = out[up].rerun and out[up].output_changes
            if changed:
                upstream.append(up)
                logical_upstream |= out[up].output_changes
        logical = world_logical if step == "world" else bool(direct) or logical_upstream
        out[step] = StepRerun(step, bool(direct or upstream), direct, tuple(upstream), output_changes=logical)
    return tuple(out.values())


def _manifest(step_dir: Path) -> dict | None:
    try:
        data = json.loads((step_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("status") == "complete" else None


def with_run_costs(reruns: tuple[StepRerun, ...], run_dir: str | Path,
                   before_hash: str | None) -> tuple[tuple[StepRerun, ...], RunCost]:
    """Attach each step's recorded wall time from ``run_dir`` and sum the invalidated ones."""
    root = Path(run_dir)
    manifests = {r.step: _manifest(root / r.step) for r in reruns}
    timed = []
    for r in reruns:
        wall = manifests[r.step].get("wall_s") if manifests[r.step] else None
        timed.append(StepRerun(r.step, r.rerun, r.direct, r.upstream, r.output_changes,
                               float(wall) if isinstance(wall, (int, float)) else None))
    plans = {m.get("plan_hash") for m in manifests.values() if m}
    cost = RunCost(run_dir=str(run_dir),
                   wall_s=round(sum(r.wall_s for r in timed if r.rerun and r.wall_s is not None), 3),
                   total_s=round(sum(r.wall_s for r in timed if r.wall_s is not None), 3),
                   missing=tuple(r.step for r in timed if r.rerun and r.wall_s is None),
                   other_plan=bool(before_hash) and bool(plans) and plans != {before_hash})
    return tuple(timed), cost
