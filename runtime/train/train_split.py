"""The instances a Stage II engine plays, and the ones its before/after measurement reads.

Both engines (TRL's GRPO step and verl's) write the same file, so held-out instances
never shape the policy whichever engine trains it. With the stage's ``rows sft`` they
are the train split SFT learned. With ``rows fresh`` (the default) they are drawn for
Stage II: trained phrasings asked with value groups that no split holds
(``runtime.workflows.draw_fresh_instances``), because SFT's own rows are solved already
(a group whose rollouts all pass gives no gradient) and a measurement on them is
in-sample. Fresh rows need no teacher: a row's reward compares with its reference run.

The step checks the fresh rows against SFT's train split, dev and test turn by turn
(``runtime.distill.leakage.rows_overlap``), writes what it found to ``rows_audit.json``
and fails on any overlap.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime.layout import GATE_INSTANCES, MEASURE_INSTANCES, ROWS_AUDIT, TRAIN_INSTANCES, WAREHOUSE

__all__ = ["train_split", "write_train_instances", "fresh_rows"]


def train_split(instances: list[dict]) -> list[dict]:
    """The instances of the train split: what SFT learned (the leak audit reads it too)."""
    return [i for i in instances if i.get("split", "train") == "train"]


def _dump(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")


def write_train_instances(ctx) -> Path:
    """Write the stage's rows to ``RUN_DIR/<step>/train_instances.json`` and the dev split
    to ``measure_instances.json``; returns the rows' path."""
    from runtime.train.stages import grpo_stage

    stage = grpo_stage(ctx.plan.recipe)
    all_instances = json.loads(ctx.input(GATE_INSTANCES).read_text())
    rows = train_split(all_instances) if stage.rows == "sft" else fresh_rows(ctx, stage, all_instances)
    path = ctx.out_dir / TRAIN_INSTANCES.path
    _dump(path, rows)
    # GRPO measures before and after on dev: held out from SFT and from these rows.
    _dump(ctx.out_dir / MEASURE_INSTANCES.path, [i for i in all_instances if i.get("split") == "dev"])
    return path


def fresh_rows(ctx, stage, instances: list[dict]) -> list[dict]:
    """Draw the stage's fresh rows, audit them against every split, write ``rows_audit.json``.

    Raises:
        StepError: a fresh row repeats a turn of SFT's data, dev or test (named), or the
            recipe gives no fresh row at all.
    """
    import duckdb

    from runtime.distill.leakage import rows_overlap
    from runtime.step_context import StepError
    from runtime.workflows import InstanceError, SolutionError, draw_fresh_instances

    recipe = ctx.plan.recipe
    solutions = {turn.solution: ctx.artifact(turn.solution) for wf in recipe.workflows for turn in wf.turns
                 if turn.solution is not None}
    con = duckdb.connect(str(ctx.input(WAREHOUSE)), read_only=True)
    try:
        drawn = draw_fresh_instances(recipe, con, recipe.seed, stage.fresh_instances, instances,
                                     solution_sources=solutions)
    except (InstanceError, SolutionError) as err:
        raise StepError(str(err)) from None
    finally:
        con.close()
    rows = [{**i.to_dict(), "split": "rl"} for i in drawn]
    if not rows:
        raise StepError(f"stage `{stage.name}` draws no fresh rows: every value group of the trained workflows "
                        "is taken by SFT's data, dev or test; write `rows sft` in the stage, or give the "
                        "workflows' params more values")
    builder = json.loads(ctx.artifact("specs/input_builder.json").read_text(encoding="utf-8"))
    from runtime.distill.datasets import read_turn_templates
    user = read_turn_templates(ctx.artifact(builder["turn_template"]).read_text(encoding="utf-8"))["user"]
    overlap = {split: rows_overlap(rows, [i for i in instances if i.get("split", "train") == split], user,
                                   builder["format"]["code"]) for split in ("train", "dev", "test")}
    per_workflow: dict[str, int] = {}
    for row in rows:
        per_workflow[row["workflow"]] = per_workflow.get(row["workflow"], 0) + 1
    trained = sorted({i["workflow"] for i in train_split(instances)})
    audit = {"rows": "fresh", "instances": len(rows), "turns": sum(len(r["turns"]) for r in rows),
             "per_workflow": dict(sorted(per_workflow.items())), "wanted_per_workflow": stage.fresh_instances,
             "short": {w: per_workflow.get(w, 0) for w in trained if per_workflow.get(w, 0) < stage.fresh_instances},
             "overlapping_turns": {("sft" if s == "train" else s): o["overlapping_turns"] for s, o in overlap.items()},
             "overlap": {("sft" if s == "train" else s): o for s, o in overlap.items()}}
    _dump(ctx.out_dir / ROWS_AUDIT.path, audit)
    found = [(s, o) for s, o in audit["overlap"].items() if o["overlapping_turns"]]
    if found:
        split, o = found[0]
        first = o["first"][0]
        raise StepError(f"fresh GRPO rows repeat {sum(x['overlapping_turns'] for _, x in found)} turn(s) of "
                        f"{', '.join(s for s, _ in found)}: first `{first['instance_id']}/t{first['turn']}` "
                        f"({', '.join(first['kinds'])} of a {split} turn), see {ROWS_AUDIT.path}; "
                        "this is a bug in craft's fresh draw: write `rows sft` in the stage meanwhile")
    short = f"; fewer than {stage.fresh_instances} for {len(audit['short'])} workflow(s) whose values ran out" \
        if audit["short"] else ""
    ctx.console.print(f"grpo: {len(rows)} fresh instances ({audit['turns']} turns) in none of SFT's data, dev "
                      f"or test{short}")
    return rows
