"""What every import source is read into, before a schema spec is written.

A source (a DuckDB file, a DDL file, a dbt YAML file) becomes a list of
:class:`SourceTable`; naming and type guesses happen later, in one place
(:mod:`craftc.importer.infer`), so every source gets the same conventions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SourceColumn", "SourceTable", "ImportFailed"]


@dataclass
class SourceColumn:
    name: str                     # physical column name, exactly as the source spells it
    type: str                     # the source's type name, upper case (BIGINT, VARCHAR, DECIMAL(12,2))
    nullable: bool = True
    comment: str = ""
    values: tuple[str, ...] = ()  # a few distinct values, when the source can show data
    values_declared: bool = False # the values come from a declaration (dbt accepted_values), not data
    type_known: bool = True       # False when the source names no type (dbt YAML without data_type)
    # Evidence from the data, when the source holds data (None: not measured).
    non_null: int | None = None   # rows where the column is not null
    distinct: int | None = None   # distinct non-null values
    value_set: frozenset[str] | None = None  # every distinct value as text, for id-like columns (capped)
    value_counts: dict[str, int] | None = None  # rows per value, for columns with few distinct values


@dataclass
class SourceTable:
    name: str                     # physical table name, schema-qualified when not `main`
    columns: list[SourceColumn] = field(default_factory=list)
    primary_key: tuple[str, ...] = ()
    foreign_keys: list[tuple[str, str, str]] = field(default_factory=list)  # (column, table, column)
    comment: str = ""
    line: int = 1                 # where the table is defined in a text source
    unique: set[str] = field(default_factory=set)   # columns declared to hold unique values
    rows: int | None = None       # row count when the source holds data; None for DDL and YAML
    file: str = ""                # the file that defines the table, for text sources
    kind: str = ""                # what describes it, for notes: "a dbt seed", "a dbt source", ...
    # Column sets measured unique and never null over all rows (the grain of a table with no
    # unique column: an id plus a version column, or a fact table's date plus dimensions).
    unique_sets: list[tuple[str, ...]] = field(default_factory=list)


class ImportFailed(Exception):
    """A source could not be read; carries the diagnostics that say why."""

    def __init__(self, diagnostics):
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = list(diagnostics)
