"""`craftc check --preflight` runs every reference through the gates before any teacher.

fixtures/lossy/lossy.craft: `industry_rank`'s reference raises a KeyError, and
`keyword_advertisers`' reference plan is rejected by the plan_code judge.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from distill_support import FIXTURES

ROOT = Path(__file__).resolve().parents[2]


def craftc(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_raising_reference_and_a_rejected_reference_plan_are_errors_before_any_teacher():
    recipe = (FIXTURES / "lossy/lossy.craft").relative_to(ROOT)
    done = craftc("check", "--preflight", recipe)
    assert done.returncode == 1
    lines = recipe.read_text().splitlines() if recipe.is_absolute() else (ROOT / recipe).read_text().splitlines()
    raising = next(n for n, text in enumerate(lines, 1) if "solutions/industry_rank.py" in text)
    judged = next(n for n, text in enumerate(lines, 1) if "solutions/keyword_advertisers.py" in text)
    # every instance the run draws for training (the count follows the held-out draw's size)
    assert re.search(r"error\[E315\]: reference of workflow `industry_rank` turn 1 fails on (\d+) of \1 instances: "
                     r"RuntimeError: KeyError: 'automotive'", done.stderr)
    assert f"--> {recipe.as_posix()}:{raising}:5" in done.stderr
    assert "help: fix the solution of `industry_rank` turn 1 so it returns rows for every param value" \
        in done.stderr
    assert re.search(r"error\[E316\]: reference of workflow `keyword_advertisers` turn 1 is rejected by the gate on "
                     r"(\d+) of \1 instances: judge plan_code: the plan names keywords but the code never reads "
                     r"`keyword`", done.stderr)
    assert f"--> {recipe.as_posix()}:{judged}:5" in done.stderr
    assert "reword the plan (the solution's docstring)" in done.stderr
    assert "spend_by_advertiser" not in done.stderr
    assert "Traceback" not in done.stderr


def test_the_json_twin_and_a_clean_recipe():
    found = json.loads(craftc("check", "--preflight", "--format", "json", FIXTURES / "lossy/lossy.craft").stdout)
    assert sorted(d["code"] for d in found[0]["diagnostics"]) == ["E315", "E316"]
    clean = craftc("check", "--preflight", "examples/hello/hello.craft")
    assert clean.returncode == 0, clean.stderr
    assert "examples/hello/hello.craft: ok" in clean.stdout


def test_no_rows_for_some_instances_is_a_warning_and_for_all_an_error():
    from craftc.frontend import load_recipe
    from craftc.preflight import _diagnostics

    load = load_recipe(FIXTURES / "lossy/lossy.craft")
    instances = [{"instance_id": f"spend_by_advertiser/{k}", "workflow": "spend_by_advertiser",
                  "params": {"n": 3, "days": 7}, "turns": [{}]} for k in range(4)]
    no_rows = "the reference solution returns no rows for these params"
    some = [{"instance_id": "spend_by_advertiser/0", "workflow": "spend_by_advertiser", "turn": 0,
             "reason": no_rows}]
    [warning] = _diagnostics(load, instances, [], some, [])
    assert (warning.code, warning.severity) == ("W317", "warning")
    assert warning.message == "reference of workflow `spend_by_advertiser` turn 1 returns no rows on 1 of 4 instances"
    every = [{**some[0], "instance_id": i["instance_id"]} for i in instances]
    [error] = _diagnostics(load, instances, [], every, [])
    assert (error.code, error.severity) == ("E315", "error") and "fails on 4 of 4 instances" in error.message


def test_the_preflight_checks_what_a_run_draws_at_its_training_volume(compiled):
    import duckdb

    from craftc.preflight import _instances
    from runtime.distill.step import run_instances

    plan, plan_dir, run_dir = compiled
    teacher = plan.recipe.teacher.model_copy(update={"instances": 12})
    sized = plan.model_copy(update={"recipe": plan.recipe.model_copy(update={"teacher": teacher})})
    warehouse = run_dir / "world" / "warehouse.duckdb"
    checked = [i["instance_id"] for i in _instances(sized, plan_dir, warehouse)]
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        drawn, split_of = run_instances(sized.recipe, con, sized.recipe.seed, solution_root=plan_dir)
    finally:
        con.close()
    assert checked == [i.instance_id for i in drawn]
    assert sum(split == "train" for split in split_of.values()) == 12 * len(sized.recipe.workflows)
