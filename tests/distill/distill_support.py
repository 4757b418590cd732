"""One seeded distillation of the mini ads recipe, shared by the pipeline tests.

The recipe (fixtures/mini_ads.craft) uses the real ads schema and the ads example
solutions; the plan is compiled with the real compiler and the warehouse built by
the real world generator, so these tests exercise the steps exactly as a run does.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from rich.console import Console

FIXTURES = Path(__file__).parent / "fixtures"
SEED = 7


def _run_step(plan, plan_dir: Path, run_dir: Path, name: str):
    from runtime.distill import step
    from runtime.step_context import StepContext

    out = run_dir / f".{name}.partial"
    out.mkdir(parents=True)
    ctx = StepContext(plan, plan_dir, run_dir, out, Console(file=open("/dev/null", "w")), SEED)
    result = getattr(step, f"run_{name}")(ctx)
    out.rename(run_dir / name)
    (run_dir / name / "manifest.json").write_text(json.dumps({"metrics": result.metrics}, default=str))
    return result


def compile_with_world(recipe: Path, root: Path):
    """(plan, plan_dir, run_dir): ``recipe`` compiled into ``root/plan`` and its warehouse
    built by the world generator into ``root/run/world``, as the world step leaves it."""
    from craftc.emit.binding_sql import binding_sql
    from craftc.emit.compile import compile_to_dir
    from craftc.ir import Plan
    from runtime.world.generate import generate_warehouse

    plan_dir = root / "plan"
    assert compile_to_dir(recipe, plan_dir).ok
    plan = Plan.model_validate_json((plan_dir / "plan.json").read_text())
    run_dir = root / "run"
    world = run_dir / "world"
    world.mkdir(parents=True)
    generate_warehouse(plan.recipe.schema_, world / "warehouse.duckdb", SEED, 1.0, binding_sql(plan.recipe.schema_))
    (world / "manifest.json").write_text("{}")
    return plan, plan_dir, run_dir


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """(plan, plan_dir, run_dir) with the world step's warehouse in place."""
    return compile_with_world(FIXTURES / "mini_ads.craft", tmp_path_factory.mktemp("mini_ads"))


@pytest.fixture(scope="session")
def distilled(compiled):
    """The run dir after the distill, gate and dataset steps, and their results."""
    plan, plan_dir, run_dir = compiled
    results = {name: _run_step(plan, plan_dir, run_dir, name) for name in ("distill", "gate", "dataset")}
    return run_dir, results


@pytest.fixture
def fresh_run_dir(compiled, tmp_path):
    """A copy of the run dir with only the world step, for tests that rerun steps."""
    plan, plan_dir, run_dir = compiled
    copy = tmp_path / "run"
    (copy / "world").mkdir(parents=True)
    for name in ("warehouse.duckdb", "manifest.json"):
        shutil.copy(run_dir / "world" / name, copy / "world" / name)
    return plan, plan_dir, copy


def compile_variant(root: Path, replace: dict[str, str]) -> tuple:
    """The mini ads recipe with text replaced, compiled under ``root`` (relative paths kept)."""
    from craftc.emit.compile import compile_to_dir
    from craftc.ir import Plan

    repo = FIXTURES.parents[2]
    root.mkdir(parents=True, exist_ok=True)
    for name in ("schema_specs", "examples"):
        if not (root / name).exists():
            (root / name).symlink_to(repo / name)
    text = (FIXTURES / "mini_ads.craft").read_text()
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    recipe = root / "a" / "b" / "c" / "mini.craft"
    recipe.parent.mkdir(parents=True, exist_ok=True)
    recipe.write_text(text)
    plan_dir = root / "plan"
    compiled = compile_to_dir(recipe, plan_dir)
    assert compiled.ok, compiled.load.render()
    return Plan.model_validate_json((plan_dir / "plan.json").read_text()), plan_dir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def served_model(tmp_path_factory):
    """A tiny model served by `transformers serve` on a free local port."""
    from runtime.train.tiny_moe import build_tiny_moe

    root = tmp_path_factory.mktemp("served")
    model = build_tiny_moe(root / "model", ["<PLAN>rank campaigns by ctr</PLAN><CODE>result = 1</CODE>"] * 20,
                           {"hidden": 64, "layers": 1, "vocab": 400, "intermediate": 64})
    port = _free_port()
    serve = Path(sys.executable).parent / "transformers"
    log = open(root / "serve.log", "w")
    process = subprocess.Popen([str(serve), "serve", str(model), "--device", "cpu", "--port", str(port)],
                               stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
            break
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.5)
    else:
        process.kill()
    if process.poll() is not None:
        raise AssertionError(f"transformers serve did not start: {(root / 'serve.log').read_text()[-2000:]}")
    yield str(model), f"http://127.0.0.1:{port}/v1"
    process.terminate()
    process.wait(timeout=10)


