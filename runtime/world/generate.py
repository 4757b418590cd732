"""The seeded warehouse generator: Schema IR + seed + scale -> a DuckDB file.

Data is generated per LOGICAL entity and field (the ads domain knows what a
campaign's status or a click's cost look like, see ``runtime.world.ads_builders``)
and written under the PHYSICAL table and column names of the spec, scaled values
divided back (``cost`` 12.34 -> ``cost_micros`` 12340000). A physical rename in the
spec therefore changes names in the file and nothing in the logical views.

Every entity and every field draws from its own random stream, seeded by
``(seed, entity[, field])``, so adding a field or an entity in a new schema version
leaves the other columns' values unchanged. Entities and fields the domain does not
know get generic values by type, so any schema generates.

Example (not run here: needs a schema IR, e.g. a loaded recipe's ``recipe.schema_``)::

    counts = generate_warehouse(schema, "warehouse.duckdb", seed=7, scale=1.0)   # rows per entity
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from craftc.emit.binding_sql import key_sql_type
from craftc.ir import Entity, EntityField, Schema
from runtime.world.ads_builders import BUILD_ORDER, BUILDERS
from runtime.world.context import DAYS, END_DATE, START_DATE, WorldContext, random_dates

__all__ = ["generate_warehouse", "generate_frames", "write_physical", "WorldContext",
           "END_DATE", "START_DATE", "DAYS", "GENERIC_ROWS", "random_dates", "generic_column"]

GENERIC_ROWS = 100                 # rows of an entity the domain does not know, at scale 1

_PHYSICAL_TYPES = {
    "int": "BIGINT", "float": "DOUBLE", "money": "DOUBLE", "string": "VARCHAR", "bool": "BOOLEAN",
    "date": "DATE", "timestamp": "TIMESTAMP", "enum": "VARCHAR", "id": "BIGINT",
}


def generic_column(ctx: WorldContext, entity: Entity, field: EntityField, n: int) -> pd.Series:
    """Values for a field the domain does not know, by logical type."""
    rng = ctx.rng(entity.name, field.name)
    kind = field.type.kind
    if kind == "enum":
        values = pd.Series(rng.choice(np.array(field.type.values, dtype=object), n))
    elif kind in ("int", "id"):
        values = pd.Series(rng.integers(0, 1000, n))
    elif kind == "float":
        values = pd.Series(np.round(rng.random(n), 4))
    elif kind == "money":
        values = pd.Series(np.round(rng.lognormal(3.0, 1.0, n), 2))
    elif kind == "bool":
        values = pd.Series(rng.random(n) < 0.5)
    elif kind == "date":
        values = pd.Series(random_dates(rng, n, START_DATE, END_DATE))
    elif kind == "timestamp":
        seconds = rng.integers(0, DAYS * 86400, n).astype("timedelta64[s]")
        values = pd.Series(np.datetime64(START_DATE, "s") + seconds)
    else:
        values = pd.Series([f"{field.name}_{i + 1}" for i in range(n)], dtype=object)
    if field.nullable:
        values = values.astype(object).where(rng.random(n) >= 0.05, None)
    return values


def _conform(ctx: WorldContext, entity: Entity, frame: pd.DataFrame) -> pd.DataFrame:
    """Exactly the spec's logical columns: generic values for unknown fields, FKs for unknown refs."""
    n = len(frame)
    out = pd.DataFrame({entity.key.name: frame["id"].to_numpy()} if entity.key is not None else {},
                       index=pd.RangeIndex(n))
    for ref in entity.refs:
        column = f"{ref.name}_id"
        if column in frame:
            out[column] = frame[column].to_numpy()
        elif ref.target in ctx.frames:
            out[column] = ctx.rng(entity.name, column).choice(ctx.keys(ref.target), n)
        else:
            out[column] = pd.array([None] * n, dtype="Int64")
    for field in entity.fields:
        if field.name in frame:
            values = frame[field.name].reset_index(drop=True)
            if field.type.kind == "enum":
                values = _conform_enum(ctx, entity, field, values)
        else:
            values = generic_column(ctx, entity, field, n)
        out[field.name] = values.to_numpy() if hasattr(values, "to_numpy") else values
    if entity.grain:        # drawn values may repeat a grain: keep its first row, so the grain holds
        out = out.drop_duplicates(subset=list(entity.grain)).reset_index(drop=True)
    if entity.history is not None:
        out = _with_versions(ctx, entity, out)
    return out


def _with_versions(ctx: WorldContext, entity: Entity, frame: pd.DataFrame) -> pd.DataFrame:
    """A history table: a third of its keys get an earlier version too (a copy whose version
    is 1 to 30 days, or units, smaller), so the current view is the rows generated here."""
    rng = ctx.rng(entity.name, "versions")
    older = frame[rng.random(len(frame)) < 1 / 3].copy()
    version = entity.history.version
    kind = next(f.type.kind for f in entity.fields if f.name == version)
    steps = rng.integers(1, 31, len(older))
    if kind in ("date", "timestamp"):
        older[version] = pd.to_datetime(older[version]) - pd.to_timedelta(steps, unit="D")
        if kind == "date":
            older[version] = older[version].dt.date
    else:
        older[version] = older[version] - steps
    return pd.concat([frame, older], ignore_index=True)


def _conform_enum(ctx, entity, field, values: pd.Series) -> pd.Series:
    # A schema version that changes an enum's values still gets only allowed values.
    allowed = set(field.type.values)
    bad = values.notna() & ~values.isin(allowed)
    if bad.any():
        fill = ctx.rng(entity.name, field.name, "enum").choice(np.array(field.type.values, dtype=object), int(bad.sum()))
        values = values.astype(object).copy()
        values[bad] = fill
    return values


def generate_frames(schema: Schema, seed: int, scale: float) -> dict[str, pd.DataFrame]:
    """Every entity's rows under LOGICAL column names, keyed by entity name."""
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}; use e.g. `scale 1` in the recipe")
    ctx = WorldContext(schema, seed, scale)
    known = [name for name in BUILD_ORDER if name in ctx.entities]
    built = set()
    for name in known:
        try:
            ctx.frames[name] = BUILDERS[name](ctx, ctx.entities[name])
            built.add(name)
        except KeyError:
            pass    # a parent the domain expects is missing from this schema: generic rows instead
    for entity in _generic_order(schema, built):
        n = ctx.dim_rows(GENERIC_ROWS)
        ctx.frames[entity.name] = pd.DataFrame({"id": ctx.ids(entity.name, n)})
    return {e.name: _conform(ctx, e, ctx.frames[e.name]) for e in schema.entities}


def _generic_order(schema: Schema, done: set[str]) -> list[Entity]:
    """Unknown entities, parents first where the refs allow it (cycles fall back to spec order)."""
    pending = [e for e in schema.entities if e.name not in done]
    ordered, placed = [], set(done)
    while pending:
        ready = [e for e in pending if all(r.target in placed or r.target == e.name for r in e.refs)] or pending[:1]
        for entity in ready:
            ordered.append(entity)
            placed.add(entity.name)
        pending = [e for e in pending if e.name not in placed]
    return ordered


def _physical_select(entity: Entity, view_columns: list[str], key_types: dict[str, str]) -> str:
    """The physical columns of an entity's frame; keys and refs typed as the spec's keys are
    (``key id string``: text ids)."""
    parts = [f'CAST("{entity.key.name}" AS {key_types[entity.name]}) AS "{entity.key.column}"'] \
        if entity.key is not None else []
    parts += [f'CAST("{r.name}_id" AS {key_types.get(r.target, "BIGINT")}) AS "{r.column}"' for r in entity.refs]
    for field in entity.fields:
        source = f'"{field.name}"'
        if field.scale not in (None, 1):
            parts.append(f'CAST(round({source} / {field.scale!r}) AS BIGINT) AS "{field.column}"')
        else:
            parts.append(f'CAST({source} AS {_PHYSICAL_TYPES[field.type.kind]}) AS "{field.column}"')
    return ", ".join(parts)


def write_physical(con: duckdb.DuckDBPyConnection, schema: Schema, frames: dict[str, pd.DataFrame]) -> None:
    """Write each entity under its physical table and column names."""
    for schema_name in sorted({e.table.split(".")[0] for e in schema.entities if "." in e.table}):
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema_name}"')
    key_types = {e.name: key_sql_type(e) for e in schema.entities if e.key is not None}
    for entity in schema.entities:
        frame = frames[entity.name]
        con.register("_entity_frame", frame)
        table = ".".join(f'"{part}"' for part in entity.table.split("."))
        select = _physical_select(entity, list(frame.columns), key_types)
        versions = (entity.history.version,) if entity.history is not None else ()
        order = ", ".join(f'"{c}"' for c in entity.row_identity + versions)
        con.execute(f'CREATE TABLE {table} AS SELECT {select} FROM _entity_frame ORDER BY {order}')
        con.unregister("_entity_frame")


def generate_warehouse(schema: Schema, db_path: str | Path, seed: int, scale: float,
                       binding_sql: str | None = None) -> dict[str, int]:
    """Build the warehouse file at ``db_path`` (replacing it) and return rows per entity.

    Args:
        schema: the Schema IR; names come from it.
        db_path: the DuckDB file to write (an existing one is removed first).
        seed: the random seed.
        scale: size knob; 1.0 gives about 30k daily stat rows, fact rows grow linearly.
        binding_sql: the logical binding to apply; when None the views are not created.

    Returns:
        Row counts keyed by entity name.
    """
    from runtime.world.binding import apply_binding

    # The world step writes into the directory the runner stages (runtime.runner), so the
    # file needs no staging of its own; an old file is replaced, never extended.
    path = Path(db_path)
    path.unlink(missing_ok=True)
    frames = generate_frames(schema, seed, scale)
    con = duckdb.connect(str(path), config={"threads": min(4, os.cpu_count() or 1)})
    try:
        write_physical(con, schema, frames)
        if binding_sql is not None:
            apply_binding(con, schema, binding_sql)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return {e.name: len(frames[e.name]) for e in schema.entities}
