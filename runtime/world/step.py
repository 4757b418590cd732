"""The ``world`` step: build the warehouse the agent works in.

Writes ``warehouse.duckdb`` (physical tables under the spec's physical names, the
logical views from the plan's ``sql/binding.sql``, the ``craft_meta`` catalog) and
``profile.json``. Its ``logical_data_hash`` metric fingerprints what the views
return, so the runner can reuse distillation and training after a physical rename.
"""

from __future__ import annotations

import json
import os
import time

import duckdb

from runtime.step_context import StepContext, StepError, StepResult
from runtime.world.binding import logical_data_hash
from runtime.world.generate import generate_warehouse
from runtime.world.profile import data_profile

__all__ = ["run_world", "WAREHOUSE_FILE", "PROFILE_FILE"]

WAREHOUSE_FILE = "warehouse.duckdb"
PROFILE_FILE = "profile.json"


def _binding_sql(ctx: StepContext) -> tuple[str, str]:
    """The plan's binding SQL; a plan compiled before it was emitted gets it rendered here."""
    try:
        return ctx.artifact("sql/binding.sql").read_text(), "plan"
    except StepError:
        from craftc.emit.binding_sql import binding_sql  # pure; only for plans that lack the artifact

        return binding_sql(ctx.plan.recipe.schema_), "rendered"


def run_world(ctx: StepContext) -> StepResult:
    """Generate the warehouse for the plan's schema, seed and scale; profile it."""
    recipe = ctx.plan.recipe
    sql, binding_source = _binding_sql(ctx)
    started = time.perf_counter()
    db_path = ctx.out_dir / WAREHOUSE_FILE
    try:
        counts = generate_warehouse(recipe.schema_, db_path, seed=recipe.seed, scale=recipe.scale, binding_sql=sql)
    except (ValueError, duckdb.Error) as error:
        raise StepError(f"cannot build the warehouse for schema `{recipe.schema_.name}`: "
                        f"{str(error).splitlines()[0]}; check the schema spec and recompile") from None
    build_s = time.perf_counter() - started
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        data_hash = logical_data_hash(con, recipe.schema_)
    finally:
        con.close()
    profile = data_profile(db_path)
    partial = ctx.out_dir / (PROFILE_FILE + ".partial")
    partial.write_text(json.dumps(profile, indent=2, sort_keys=True) + "\n")
    os.replace(partial, ctx.out_dir / PROFILE_FILE)
    fact_rows = max(counts.values()) if counts else 0
    ctx.console.print(f"world: {sum(counts.values()):,} rows in {len(counts)} entities, {build_s:.1f}s")
    return StepResult(
        metrics={"row_counts": counts, "total_rows": sum(counts.values()), "build_s": round(build_s, 3),
                 "rows_per_s": round(sum(counts.values()) / build_s) if build_s else None,
                 "largest_entity_rows": fact_rows, "logical_data_hash": data_hash,
                 "binding_source": binding_source, "seed": recipe.seed, "scale": recipe.scale},
        outputs=(WAREHOUSE_FILE, PROFILE_FILE),
    )
