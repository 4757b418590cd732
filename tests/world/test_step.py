"""The world step: warehouse, profile and metrics in the step's out dir."""

from __future__ import annotations

import json

from rich.console import Console

from craftc.emit.binding_sql import binding_sql
from craftc.ir import Plan, Recipe
from runtime.step_context import StepContext
from runtime.world.api import connect
from runtime.world.step import run_world


def _context(tmp_path, schema, with_binding: bool) -> StepContext:
    plan_dir, out_dir = tmp_path / "plan", tmp_path / "run" / "world.partial"
    (plan_dir / "sql").mkdir(parents=True)
    out_dir.mkdir(parents=True)
    if with_binding:
        (plan_dir / "sql" / "binding.sql").write_text(binding_sql(schema))
    plan = Plan(craftc_version="test", recipe=Recipe(name="ads", schema=schema, seed=3, scale=0.2))
    return StepContext(plan=plan, plan_dir=plan_dir, run_dir=tmp_path / "run", out_dir=out_dir,
                       console=Console(quiet=True), seed=3)


def test_world_step_builds_warehouse_profile_and_metrics(ads_schema, tmp_path):
    ctx = _context(tmp_path, ads_schema, with_binding=True)
    result = run_world(ctx)
    assert set(result.outputs) == {"warehouse.duckdb", "profile.json"}
    assert result.metrics["binding_source"] == "plan"
    assert len(result.metrics["logical_data_hash"]) == 64
    assert result.metrics["row_counts"]["DailyStat"] == 6000
    profile = json.loads((ctx.out_dir / "profile.json").read_text())
    assert profile["row_counts"]["daily_stat"] == 6000
    assert sorted(p.name for p in ctx.out_dir.iterdir()) == ["profile.json", "warehouse.duckdb"]
    assert len(connect(ctx.out_dir / "warehouse.duckdb").list_entities()) == 25


def test_world_step_renders_the_binding_when_the_plan_lacks_it(ads_schema, tmp_path):
    with_plan = run_world(_context(tmp_path / "a", ads_schema, with_binding=True))
    rendered = run_world(_context(tmp_path / "b", ads_schema, with_binding=False))
    assert rendered.metrics["binding_source"] == "rendered"
    assert rendered.metrics["logical_data_hash"] == with_plan.metrics["logical_data_hash"]
