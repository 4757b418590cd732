"""What the end-to-end modules share: `craftc` as a user runs it, a copy of the ads
recipe's tree, and one full run of its `smoke` profile.

The smoke run is built once per test session and read by several modules: a test that
reruns a step on it works on a copy (`shutil.copytree`, or `run_dir_from` in
test_plan_is_the_program), so every reader sees the run exactly as the pipeline left it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = ["world", "distill", "gate", "dataset", "sft", "grpo", "eval", "report"]


def craftc(*args, cwd, timeout=1500):
    return subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def recipe_tree(dest: Path, spec: str) -> Path:
    """A copy of the ads recipe and its solutions under `dest`, using `spec` as its schema."""
    (dest / "recipes").mkdir(parents=True)
    (dest / "schema_specs").mkdir()
    shutil.copytree(ROOT / "examples", dest / "examples")
    text = (ROOT / "recipes/ads_analytics.craft").read_text()
    (dest / "recipes/ads_analytics.craft").write_text(text)
    shutil.copy(ROOT / "schema_specs" / spec, dest / "schema_specs/ads.craft")
    return dest / "recipes/ads_analytics.craft"


@dataclass(frozen=True)
class SmokeRun:
    """The ads recipe (work/v1) compiled with `--profile smoke` into `plan` and run whole
    into `run_dir`. Read it; copy it before running anything on it."""

    work: Path
    plan: Path
    run_dir: Path
    output: str          # what `craftc run` printed (stdout, then stderr)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> SmokeRun:
    work = tmp_path_factory.mktemp("smoke")
    recipe = recipe_tree(work / "v1", "ads.craft")
    plan, run_dir = work / "plan_v1", work / "run"
    compiled = craftc("compile", recipe, "-o", plan, "--profile", "smoke", cwd=work)
    assert compiled.returncode == 0, compiled.stderr
    ran = craftc("run", plan, "--run-dir", run_dir, cwd=work)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return SmokeRun(work, plan, run_dir, ran.stdout + ran.stderr)
