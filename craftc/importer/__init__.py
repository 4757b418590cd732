"""`craftc import`: schema specs from a live warehouse, SQL DDL or dbt YAML, and drift checks.

Example:
    >>> text = import_schema("warehouse.duckdb", name="shop")  # doctest: +SKIP
    >>> print(text.splitlines()[2])                            # doctest: +SKIP
    schema shop version 1 {
"""

from __future__ import annotations

from pathlib import Path

from craftc.importer.drift import Drift, compute_drift, render_drift
from craftc.importer.infer import infer_entities
from craftc.importer.model import ImportFailed, SourceTable
from craftc.importer.sources import DDL_DIALECTS, read_source
from craftc.importer.write_spec import write_schema_spec

__all__ = ["import_schema", "read_source", "compute_drift", "render_drift", "Drift",
           "ImportFailed", "SourceTable", "DDL_DIALECTS"]


def import_schema(source: str | Path, name: str | None = None, dialect: str | None = None) -> str:
    """Read a source and return the text of a schema spec for it.

    Raises:
        ImportFailed: with diagnostics naming the file, the place and the fix.
    """
    source = Path(source)
    tables = read_source(source, dialect)
    name = name or _spec_name(source)
    return write_schema_spec(name, infer_entities(tables), source.name)


def _spec_name(source: Path) -> str:
    stem = "".join(ch if ch.isalnum() else "_" for ch in source.stem.lower()).strip("_") or "imported"
    return stem if stem[0].isalpha() else f"s_{stem}"
