"""Inside the warehouse: apply the logical binding, write the catalog, hash the logical data.

The binding SQL (views over the physical tables) comes from the plan dir; this module
runs it and writes the ``craft_meta`` catalog the Ads API reads its docs and logical
types from. :func:`logical_data_hash` fingerprints what the views return, so two
warehouses that differ only in physical names hash the same.
"""

from __future__ import annotations

import hashlib

import duckdb
import pandas as pd

from craftc.ir import Entity, EntityField, Schema
from craftc.emit.binding_sql import history_doc
from runtime.world.api import CATALOG_SCHEMA

__all__ = ["apply_binding", "write_catalog", "logical_data_hash", "logical_type_name"]


def logical_type_name(field: EntityField) -> str:
    """The type as the spec writes it: ``money``, ``enum(a, b)``."""
    if field.type.kind == "enum":
        return f"enum({', '.join(field.type.values)})"
    return field.type.kind


def apply_binding(con: duckdb.DuckDBPyConnection, schema: Schema, binding_sql: str) -> None:
    """Create the logical views and the catalog inside an open, writable warehouse."""
    con.execute(binding_sql)
    write_catalog(con, schema)


def _views(schema: Schema) -> list[tuple[Entity, bool]]:
    """(entity, every version?) per view the catalog lists: each entity's own view, then
    the history views of history tables (so positions of the other views never move)."""
    return [(e, False) for e in schema.entities] + [(e, True) for e in schema.entities if e.history]


def _entity_rows(schema: Schema) -> list[dict]:
    return [{"position": i, "view": e.history.view if every else e.view,
             "entity": f"{e.name}History" if every else e.name,
             "doc": history_doc(e) if every else e.doc, "table_name": e.table}
            for i, (e, every) in enumerate(_views(schema))]


def _key_doc(entity: Entity, every_version: bool) -> str:
    """What the key column is, in `describe`: unique in the entity's view, once per version in its history."""
    what = entity.view.replace("_", " ")
    if every_version:
        return f"id of the {what}, once per version ({entity.view} holds the latest)"
    if entity.history is not None:
        return f"unique id of the {what} (its latest version; {entity.history.view} holds every version)"
    return f"unique id of the {what}"


def _grain_doc(entity: Entity, name: str) -> str:
    return f"part of the grain: one row per ({', '.join(entity.grain)})" if name in entity.grain else ""


def _field_rows(schema: Schema) -> list[dict]:
    targets = {e.name: e.view for e in schema.entities}
    rows = []
    for view_position, (entity, every) in enumerate(_views(schema)):
        fields = [(entity.key.name, "id", _key_doc(entity, every), False, None, entity.key.column)] \
            if entity.key is not None else []
        fields += [(f"{r.name}_id", "id", _joined(r.doc, _grain_doc(entity, f"{r.name}_id")), r.nullable,
                    targets.get(r.target, r.target), r.column) for r in entity.refs]
        fields += [(f.name, logical_type_name(f), _joined(_doc(f), _grain_doc(entity, f.name)), f.nullable, None,
                    f.column) for f in entity.fields]
        for position, (name, kind, doc, nullable, references, column) in enumerate(fields):
            rows.append({"view_position": view_position, "position": position,
                         "view": entity.history.view if every else entity.view,
                         "field": name, "type": kind, "doc": doc, "nullable": nullable,
                         "references": references, "column_name": column})
    return rows


def _joined(doc: str, extra: str) -> str:
    return f"{doc} ({extra})" if doc and extra else doc or extra


def _doc(field: EntityField) -> str:
    return f"DEPRECATED: {field.deprecated}. {field.doc}".strip() if field.deprecated else field.doc


def write_catalog(con: duckdb.DuckDBPyConnection, schema: Schema) -> None:
    """Entity and field docs, logical types and refs, for ``describe`` and ``list_entities``."""
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {CATALOG_SCHEMA}")
    entities = pd.DataFrame(_entity_rows(schema), columns=["position", "view", "entity", "doc", "table_name"])
    fields = pd.DataFrame(_field_rows(schema), columns=[
        "view_position", "position", "view", "field", "type", "doc", "nullable", "references", "column_name"])
    fields["references"] = fields["references"].astype("object")
    for name, frame in (("entities", entities), ("fields", fields)):
        con.register("_catalog_frame", frame)
        con.execute(f"CREATE OR REPLACE TABLE {CATALOG_SCHEMA}.{name} AS SELECT * FROM _catalog_frame")
        con.unregister("_catalog_frame")


def _view_digest(con: duckdb.DuckDBPyConnection, view: str) -> str:
    columns = sorted(row[0] for row in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ?", [view]
    ).fetchall())
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    types = con.execute(f'SELECT * FROM "{view}" LIMIT 0').description
    type_text = ",".join(f"{d[0]}:{d[1]}" for d in sorted(types, key=lambda d: d[0]))
    # A sum of row hashes does not depend on row order or on how the rows are stored.
    count, total = con.execute(
        f'SELECT count(*), coalesce(sum(hash({quoted})::HUGEINT), 0) FROM "{view}"'
    ).fetchall()[0]
    return f"{view}|{type_text}|{count}|{total}"


def logical_data_hash(con: duckdb.DuckDBPyConnection, schema: Schema) -> str:
    """sha256 over the contents of every logical view, independent of physical names."""
    digest = hashlib.sha256()
    for entity in sorted(schema.entities, key=lambda e: e.view):
        digest.update(_view_digest(con, entity.view).encode() + b"\n")
        if entity.history is not None:     # the versions the current view does not show
            digest.update(_view_digest(con, entity.history.view).encode() + b"\n")
    return digest.hexdigest()
