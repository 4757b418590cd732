"""`craftc import`: schema specs from a live warehouse, SQL DDL or dbt YAML, and drift checks.

Example:
    >>> import duckdb, tempfile, pathlib
    >>> db = pathlib.Path(tempfile.mkdtemp()) / "shop.duckdb"
    >>> duckdb.connect(str(db)).execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name VARCHAR)").close()
    >>> print("\\n".join(import_schema(db, name="shop").splitlines()[2:]))
    schema shop version 1 {
      doc "Imported from shop.duckdb"
    <BLANKLINE>
      entity CustomerEntity {
        table "customer"
        key   id -> column "id"
        field name string nullable
      }
    }
    >>> import shutil; shutil.rmtree(db.parent)
"""

from __future__ import annotations

from pathlib import Path

from craftc.importer.drift import Drift, compute_drift, render_drift
from craftc.importer.infer import infer_entities
from craftc.importer.merge import merge_dbt_docs, merge_same_relation
from craftc.importer.model import ImportFailed, SourceTable
from craftc.importer.names import identifier
from craftc.importer.sources import DDL_DIALECTS, read_source, read_source_with_notes
from craftc.importer.write_spec import write_schema_spec

__all__ = ["import_schema", "import_tables", "read_source", "compute_drift", "render_drift", "Drift",
           "ImportFailed", "SourceTable", "DDL_DIALECTS"]


def import_schema(source: str | Path, name: str | None = None, dialect: str | None = None,
                  docs_from: str | Path | None = None, report: list[str] | None = None) -> str:
    """Read a source (and, with ``docs_from``, a dbt project's docs and tests for it) and
    return the text of a schema spec; ``report`` receives lines for the user (what
    --docs-from matched).

    Raises:
        ImportFailed: with diagnostics naming the file, the place and the fix.
    """
    source = Path(source)
    tables, notes = read_source_with_notes(source, dialect)
    shown = source.name if source.name != "dbt_project.yml" else source.parent.name or "dbt project"
    if docs_from is not None:
        docs, doc_notes = read_source_with_notes(Path(docs_from), seeds=False)
        notes = notes + doc_notes + merge_dbt_docs(tables, docs, Path(docs_from).name, report,
                                                   Path(docs_from).as_posix())
        shown += f" with docs from {Path(docs_from).name}"
    return import_tables(tables, name or _spec_name(source), shown, notes)


def import_tables(tables: list[SourceTable], name: str, source: str, notes: list[str] = ()) -> str:
    """The spec text for tables already read (the in-process entry the fuzz tests use)."""
    notes = list(notes)
    tables = merge_same_relation(tables, notes)
    return write_schema_spec(identifier(name, "s"), infer_entities(tables), source, notes=notes)


def _spec_name(source: Path) -> str:
    if source.name in ("manifest.json", "catalog.json") and source.parent.name == "target":
        source = source.parent.parent.resolve()      # dbt's target dir: name it after the project
    if source.is_dir() or source.name == "dbt_project.yml":
        source = (source if source.is_dir() else source.parent).resolve()
        return identifier(source.name, "s") if source.name else "imported"
    return identifier(source.stem, "s")
