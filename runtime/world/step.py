"""The ``world`` step: build the warehouse the agent works in.

Writes ``warehouse.duckdb`` (physical tables under the spec's physical names, the
logical views from the plan's ``sql/binding.sql``, the ``craft_meta`` catalog) and
``profile.json``. Its ``logical_data_hash`` metric fingerprints what the views
return, so the runner can reuse distillation and training after a physical rename.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import duckdb

from runtime.layout import WAREHOUSE, WORLD_PROFILE
from runtime.step_context import StepContext, StepError, StepResult
from runtime.world.binding import apply_binding, logical_data_hash
from runtime.world.generate import generate_warehouse
from runtime.world.data_check import check_data
from runtime.world.profile import data_profile

__all__ = ["run_world"]

SOURCE_FILE = "source.json"      # written by `craftc compile` next to plan.json (craftc.emit.compile)


def _binding_sql(ctx: StepContext) -> tuple[str, str]:
    """The plan's binding SQL; a plan compiled before it was emitted gets it rendered here."""
    try:
        return ctx.artifact("sql/binding.sql").read_text(), "plan"
    except StepError:
        from craftc.emit.binding_sql import binding_sql  # pure; only for plans that lack the artifact

        return binding_sql(ctx.plan.recipe.schema_), "rendered"


def existing_warehouse(recipe, plan_dir: Path) -> Path | None:
    """The warehouse the recipe names (`warehouse "path"` or `warehouse env("VAR")`), if any.

    A path is relative to the recipe file; the plan dir's ``source.json`` (written by
    `craftc compile`) says where the recipe's directory is, relative to the plan dir.
    """
    if recipe.warehouse_env:
        value = os.environ.get(recipe.warehouse_env)
        if not value:
            raise StepError(f"recipe `{recipe.name}` reads its warehouse from ${recipe.warehouse_env}, which is "
                            f"not set; export {recipe.warehouse_env}=/path/to/warehouse.duckdb")
        return Path(value)
    if not recipe.warehouse:
        return None
    if Path(recipe.warehouse).is_absolute():
        return Path(recipe.warehouse)
    try:
        recipe_dir = json.loads((Path(plan_dir) / SOURCE_FILE).read_text(encoding="utf-8"))["recipe_dir"]
    except (OSError, ValueError, KeyError, TypeError):
        raise StepError(f"`warehouse \"{recipe.warehouse}\"` is relative to the recipe, but the plan dir "
                        f"`{plan_dir}` has no valid {SOURCE_FILE} saying where the recipe is; recompile it "
                        "with `craftc compile RECIPE -o PLAN_DIR`") from None
    return Path(os.path.normpath(Path(plan_dir) / recipe_dir / recipe.warehouse))


def bind_existing(schema, source: Path, db_path: Path, sql: str) -> dict[str, int]:
    """Copy an existing warehouse and add the logical views; the original is never written."""
    if not source.is_file():
        raise StepError(f"existing warehouse `{source}` not found (a `warehouse \"...\"` path is relative to "
                        "the recipe file); fix the path in the recipe and recompile, or build the warehouse there")
    shutil.copyfile(source, db_path)
    con = duckdb.connect(str(db_path))
    try:
        apply_binding(con, schema, sql)
        counts = {e.name: con.execute(f'SELECT count(*) FROM "{e.view}"').fetchall()[0][0]
                  for e in schema.entities}
    finally:
        con.close()
    return counts


def run_world(ctx: StepContext) -> StepResult:
    """Generate (or bind an existing) warehouse for the plan's schema; profile it."""
    recipe = ctx.plan.recipe
    sql, binding_source = _binding_sql(ctx)
    started = time.perf_counter()
    db_path = ctx.out_dir / WAREHOUSE.path
    source = existing_warehouse(recipe, ctx.plan_dir)
    try:
        if source is not None:
            counts = bind_existing(recipe.schema_, source, db_path, sql)
        else:
            counts = generate_warehouse(recipe.schema_, db_path, seed=recipe.seed, scale=recipe.scale,
                                        binding_sql=sql)
    except (ValueError, duckdb.Error) as error:
        raise StepError(f"cannot build the warehouse for schema `{recipe.schema_.name}`: "
                        f"{str(error).splitlines()[0]}; check the schema spec and recompile") from None
    build_s = time.perf_counter() - started
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        data_hash = logical_data_hash(con, recipe.schema_)
        problems = [f for f in check_data(con, recipe.schema_) if f.severity != "ok"]
    finally:
        con.close()
    for finding in problems:      # the spec says what the rows do not: `craftc check --preflight` locates it
        ctx.console.print(f"world: {finding.code} {finding.message}")
    profile = data_profile(db_path)
    (ctx.out_dir / WORLD_PROFILE.path).write_text(json.dumps(profile, indent=2, sort_keys=True) + "\n")
    fact_rows = max(counts.values()) if counts else 0
    ctx.console.print(f"world: {sum(counts.values()):,} rows in {len(counts)} entities, {build_s:.1f}s")
    return StepResult(
        metrics={"row_counts": counts, "total_rows": sum(counts.values()), "build_s": round(build_s, 3),
                 "rows_per_s": round(sum(counts.values()) / build_s) if build_s else None,
                 "largest_entity_rows": fact_rows, "logical_data_hash": data_hash,
                 "binding_source": binding_source, "seed": recipe.seed, "scale": recipe.scale,
                 "data_checks": {code: sum(f.code == code for f in problems)
                                 for code in sorted({f.code for f in problems})},
                 "warehouse": "existing" if source is not None else "generated"},
        outputs=(WAREHOUSE.path, WORLD_PROFILE.path),
    )
