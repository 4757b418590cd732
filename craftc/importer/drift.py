"""Drift between a live source and the schema spec that claims to describe it.

Only the physical side is compared (tables, columns, types): that is what a
warehouse team changes under a trained model. A column that disappears while
another of the same type appears in the same table is reported as a rename, the
way a reviewer would read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from craftc.importer.conventions import type_kind
from craftc.importer.model import SourceTable
from craftc.ir import Schema

__all__ = ["Drift", "DriftChange", "compute_drift", "render_drift"]

# Language kinds a source kind may legitimately back (money is stored as int or float, ...).
COMPATIBLE = {
    "money": {"int", "float"}, "float": {"float", "int"}, "int": {"int"},
    "enum": {"string"}, "string": {"string", "id"}, "id": {"int", "string", "id"},
    "bool": {"bool"}, "date": {"date", "timestamp"}, "timestamp": {"timestamp", "date"},
}


@dataclass(frozen=True)
class DriftChange:
    symbol: str          # "+", "~", "-"
    table: str
    what: str            # "table", "column", "renamed", "retyped"
    detail: str


@dataclass
class Drift:
    changes: list[DriftChange] = field(default_factory=list)

    @property
    def counts(self) -> tuple[int, int, int]:
        return tuple(sum(c.symbol == s for c in self.changes) for s in "+~-")  # type: ignore[return-value]

    def to_dict(self) -> dict:
        add, change, remove = self.counts
        return {"changes": [c.__dict__ for c in self.changes],
                "summary": {"add": add, "change": change, "remove": remove}}


def _spec_columns(schema: Schema) -> dict[str, dict[str, str]]:
    """Physical table -> physical column -> language kind, as the spec declares them."""
    tables: dict[str, dict[str, str]] = {}
    key_types = {e.name: e.key.type for e in schema.entities if e.key is not None}
    for e in schema.entities:
        # A key and the refs to it hold ids of the type the key declares (`key id string`).
        cols = {e.key.column: e.key.type} if e.key is not None else {}
        cols.update({r.column: key_types.get(r.target, "id") for r in e.refs})
        cols.update({f.column: f.type.kind for f in e.fields})
        tables[e.table] = cols
    return tables


def compute_drift(schema: Schema, live: list[SourceTable]) -> Drift:
    spec = _spec_columns(schema)
    source = {t.name: {c.name: type_kind(c.type) for c in t.columns} for t in live}
    untyped = {(t.name, c.name) for t in live for c in t.columns if not c.type_known}   # dbt YAML without data_type
    drift = Drift()
    for table in sorted(source.keys() - spec.keys()):
        drift.changes.append(DriftChange("+", table, "table", f"{len(source[table])} columns, not in the spec"))
    for table in sorted(spec.keys() - source.keys()):
        drift.changes.append(DriftChange("-", table, "table", "in the spec, gone from the source"))
    for table in sorted(spec.keys() & source.keys()):
        declared, actual = spec[table], source[table]
        added = sorted(actual.keys() - declared.keys())
        removed = sorted(declared.keys() - actual.keys())
        for old in list(removed):
            match = next((new for new in added if actual[new] in COMPATIBLE[declared[old]]), None)
            if match is not None:
                drift.changes.append(DriftChange("~", table, "renamed", f"{old} -> {match}"))
                removed.remove(old)
                added.remove(match)
        for col in added:
            drift.changes.append(DriftChange("+", table, "column", f"{col} ({actual[col]})"))
        for col in removed:
            drift.changes.append(DriftChange("-", table, "column", col))
        for col in sorted(declared.keys() & actual.keys()):
            if actual[col] not in COMPATIBLE[declared[col]] and (table, col) not in untyped:
                drift.changes.append(DriftChange("~", table, "retyped", f"{col}: {declared[col]} -> {actual[col]}"))
    return drift


def render_drift(drift: Drift, spec_path: str, source: str) -> str:
    """Terraform-style text; the last line counts the changes."""
    if not drift.changes:
        return f"No drift: {source} matches {spec_path}.\n"
    lines = [f"Drift between {spec_path} and {source}:", ""]
    by_table: dict[str, list[DriftChange]] = {}
    for c in drift.changes:
        by_table.setdefault(c.table, []).append(c)
    for table, changes in by_table.items():
        whole = [c for c in changes if c.what == "table"]
        if whole:
            lines.append(f"  {whole[0].symbol} table {table}: {whole[0].detail}")
            continue
        lines.append(f"  ~ table {table}")
        for c in changes:
            lines.append(f"      {c.symbol} {c.what} {c.detail}" if c.what != "column"
                         else f"      {c.symbol} column {c.detail}")
    add, change, remove = drift.counts
    lines += ["", f"Drift: {add} to add, {change} to change, {remove} to remove."]
    return "\n".join(lines) + "\n"
