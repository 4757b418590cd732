"""A binding-only schema change reuses everything but the world.

The smoke profile runs world -> distill -> gate -> dataset on the ads recipe, then the
same recipe on ads_v1_1.craft (tables moved, columns renamed) runs into the same run
dir: the world is rebuilt under the new physical names, its logical data hash is
unchanged, and distill, gate and dataset are reused because they read only the
logical schema and the world's logical data.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evolution_support import craftc, recipe_tree

from runtime.plan import load_plan
from runtime.runner import step_inputs_hash

STEPS = ["world", "distill", "gate", "dataset"]


def _statuses(run_dir: Path) -> dict[str, str]:
    return {s["step"]: s["status"] for s in json.loads((run_dir / "run.json").read_text())["steps"]}


def _logical_hash(run_dir: Path) -> str:
    return json.loads((run_dir / "world/manifest.json").read_text())["metrics"]["logical_data_hash"]


def _compile(tree: Path, out: Path) -> Path:
    result = craftc("compile", "recipes/ads_analytics.craft", "-o", out, "--profile", "smoke", cwd=tree)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def v1_run(tmp_path_factory):
    """The v1 plan run until dataset; returns (tmp root, run dir, logical data hash)."""
    root = tmp_path_factory.mktemp("evolution")
    plan = _compile(recipe_tree(root / "v1", "ads.craft").parents[1], root / "plan_v1")
    run_dir = root / "run"
    result = craftc("run", plan, "--run-dir", run_dir, "--until", "dataset")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _statuses(run_dir) == dict.fromkeys(STEPS, "ran")
    shutil.copytree(run_dir, root / "run_v1")          # as it was, for tests that run into a copy
    return root, run_dir, _logical_hash(run_dir)


def test_binding_only_change_reruns_world_and_reuses_distill_gate_dataset(v1_run):
    root, run_dir, v1_hash = v1_run
    # The v1_1 spec under the file name the v1 plan used: only the bindings differ.
    plan = _compile(recipe_tree(root / "v1_1", "ads_v1_1.craft").parents[1], root / "plan_v1_1")
    result = craftc("run", plan, "--run-dir", run_dir, "--until", "dataset")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _statuses(run_dir) == {"world": "ran", "distill": "reused", "gate": "reused", "dataset": "reused"}
    assert _logical_hash(run_dir) == v1_hash
    tables = json.loads((run_dir / "world/manifest.json").read_text())
    assert tables["plan_hash"] == load_plan(plan).content_hash


def test_the_diff_predicts_what_the_runner_reruns(v1_run):
    """`craftc diff`'s rerun list comes from the runner's own hashing: it agrees step for step."""
    root, run_dir, _ = v1_run
    plan = root / "plan_v1_1"
    if not plan.exists():
        _compile(recipe_tree(root / "v1_1", "ads_v1_1.craft").parents[1], plan)
    predicted = json.loads(craftc("diff", root / "plan_v1", plan, "--format", "json").stdout)["reruns"]
    assert {r["step"]: r["rerun"] for r in predicted} == {
        "world": True, "distill": False, "gate": False, "dataset": False,
        "sft": False, "grpo": False, "eval": True, "report": False}
    # Into a copy of the v1 run, so the order of the tests does not matter.
    fresh = shutil.copytree(root / "run_v1", root / "run_for_prediction")
    result = craftc("run", plan, "--run-dir", fresh, "--until", "dataset")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _statuses(fresh) == {r["step"]: "ran" if r["rerun"] else "reused" for r in predicted
                                if r["step"] in STEPS}


def test_the_spec_file_name_does_not_invalidate_distill(v1_run):
    root, run_dir, _ = v1_run
    plan = _compile(recipe_tree(root / "v1_1_named", "ads_v1_1.craft", spec_name="ads_v1_1.craft").parents[1],
                    root / "plan_v1_1_named")
    recorded = json.loads((run_dir / "distill/manifest.json").read_text())["inputs_hash"]
    assert step_inputs_hash("distill", load_plan(plan), run_dir) == recorded
