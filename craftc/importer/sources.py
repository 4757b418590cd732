"""Readers for import sources: a DuckDB database, a SQL DDL file; dbt sources dispatch to
craftc.importer.dbt_yaml and craftc.importer.dbt_artifacts.

Each reader returns ``list[SourceTable]`` or raises :class:`ImportFailed` with a
diagnostic that names the file, the place and the fix. Another SQL engine is one
more reader that fills the same dataclasses from its information schema.
"""

from __future__ import annotations

from pathlib import Path

from craftc.diagnostics import Diagnostic, span_at
from craftc.importer.conventions import type_kind
from craftc.importer.infer import ENUM_MAX_VALUES
from craftc.importer.dbt_artifacts import read_dbt_artifacts
from craftc.importer.dbt_yaml import is_dbt_project_file, read_dbt_project, read_dbt_yaml
from craftc.importer.model import ImportFailed, SourceColumn, SourceTable

__all__ = ["read_source", "read_source_with_notes", "read_duckdb", "read_duckdb_connection", "read_ddl",
           "DDL_DIALECTS"]

DDL_DIALECTS = ("duckdb", "postgres", "bigquery", "snowflake", "mysql", "sqlite", "tsql",
                "redshift", "databricks", "spark", "trino", "oracle", "clickhouse")
# Id-like values kept per column to test refs by containment; more than this: naming only.
VALUE_SET_CAP = 200_000
TEXT_TYPES = ("VARCHAR", "TEXT", "STRING")
# The catalog craft's world step writes next to the warehouse tables (docs for the API).
CRAFT_CATALOG_SCHEMA = "craft_meta"


def _fail(code: str, message: str, file: str, line: int = 1, col: int = 1, help: str = "") -> ImportFailed:
    return ImportFailed([Diagnostic(code, "error", message, span_at(file, line, col), help)])


def read_source(path: str | Path, dialect: str | None = None) -> list[SourceTable]:
    """The tables of a source (see :func:`read_source_with_notes`)."""
    return read_source_with_notes(path, dialect)[0]


def read_source_with_notes(path: str | Path, dialect: str | None = None,
                           seeds: bool = True) -> tuple[list[SourceTable], list[str]]:
    """Dispatch on the file: `.duckdb`/`.db` database, `.sql` DDL, dbt `.yml`, a dbt project
    (its directory or dbt_project.yml), dbt `manifest.json`/`catalog.json`. Notes say what
    was skipped or read alongside. ``seeds=False`` leaves a dbt project's seed CSVs unread
    (for --docs-from, where the warehouse gives types and data)."""
    path = Path(path)
    shown = path.as_posix()
    if not path.exists():
        raise _fail("E901", f"import source `{shown}` does not exist", shown,
                    help="pass a DuckDB file, a .sql DDL file, a dbt .yml file or a dbt project")
    suffix = path.suffix.lower()
    if path.is_dir() or is_dbt_project_file(path):
        if not (path / "dbt_project.yml").is_file() and path.is_dir():
            raise _fail("E902", f"the directory `{shown}` is not a dbt project (no dbt_project.yml)", shown,
                        help="pass a DuckDB file, a .sql DDL file, a dbt .yml file or a dbt project directory")
        return read_dbt_project(path, seeds)
    if suffix in (".duckdb", ".db", ".ddb"):
        return read_duckdb(path), []
    if suffix == ".sql":
        return read_ddl(path, dialect or "duckdb"), []
    if suffix in (".yml", ".yaml"):
        return read_dbt_yaml(path)
    if suffix == ".json":
        return read_dbt_artifacts(path)
    raise _fail("E902", f"cannot tell what kind of import source `{shown}` is", shown,
                help="use a .duckdb/.db database, a .sql DDL file, a dbt .yml/.yaml file, a dbt project "
                     "or dbt's target/manifest.json / catalog.json")


# ------------------------------------------------------------------ DuckDB


def read_duckdb(path: Path) -> list[SourceTable]:
    """Base tables of a DuckDB file (views are bindings, not data, and are skipped)."""
    import duckdb

    shown = path.as_posix()
    try:
        con = duckdb.connect(str(path), read_only=True)
    except (duckdb.Error, OSError) as exc:
        raise _fail("E903", f"cannot open `{shown}` as a DuckDB database: {str(exc).splitlines()[0][:200]}",
                    shown, help="check the file is a DuckDB database and not open for writing elsewhere") from None
    try:
        return read_duckdb_connection(con, shown)
    finally:
        con.close()


def read_duckdb_connection(con, shown: str) -> list[SourceTable]:
    """The tables of an open DuckDB connection, with the evidence their data gives."""
    tables = con.execute(
        "SELECT schema_name, table_name, coalesce(comment, '') FROM duckdb_tables() "
        "WHERE NOT internal AND NOT temporary AND schema_name <> ? ORDER BY schema_name, table_name",
        [CRAFT_CATALOG_SCHEMA]).fetchall()
    if not tables:
        raise _fail("E904", f"`{shown}` has no tables to import", shown,
                    help="point the import at the database that holds the warehouse tables")
    columns: dict[tuple[str, str], list] = {}
    for schema, table, *col in con.execute(
            "SELECT schema_name, table_name, column_name, data_type, is_nullable, coalesce(comment, '') "
            "FROM duckdb_columns() WHERE NOT internal ORDER BY schema_name, table_name, column_index").fetchall():
        columns.setdefault((schema, table), []).append(col)
    constraints: dict[tuple[str, str], list] = {}
    for schema, table, *row in con.execute(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
            "referenced_column_names FROM duckdb_constraints()").fetchall():
        constraints.setdefault((schema, table), []).append(row)
    out = []
    for schema, table, comment in tables:
        st = SourceTable(name=table if schema == "main" else f"{schema}.{table}", comment=comment, file=shown)
        for name, dtype, nullable, col_comment in columns.get((schema, table), []):
            st.columns.append(SourceColumn(name=name, type=dtype.upper(), nullable=bool(nullable),
                                           comment=col_comment))
        _read_constraints(constraints.get((schema, table), []), schema, st)
        if st.columns:
            profile_data(con, _quote_ident(schema) + "." + _quote_ident(table), st)
            out.append(st)
    return out


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _read_constraints(rows: list, schema: str, st: SourceTable) -> None:
    for kind, cols, ref_table, ref_cols in rows:
        if kind == "PRIMARY KEY":
            st.primary_key = tuple(cols)
        elif kind == "UNIQUE" and len(cols) == 1:
            st.unique.add(cols[0])
        elif kind == "FOREIGN KEY" and len(cols) == 1 and ref_table:
            target = ref_table if schema == "main" else f"{schema}.{ref_table}"
            st.foreign_keys.append((cols[0], target, ref_cols[0]))


def profile_data(con, relation: str, st: SourceTable) -> None:
    """Row count, and per column non-null and distinct counts and (for columns that can
    hold ids or enum values) every distinct value up to VALUE_SET_CAP: the evidence the
    key, ref and enum guesses are checked against. Two queries per table."""
    import duckdb

    try:
        counts = con.execute("SELECT count(*), " + ", ".join(
            f"count({_quote_ident(c.name)}), count(DISTINCT {_quote_ident(c.name)})" for c in st.columns)
            + f" FROM {relation}").fetchone()
    except duckdb.Error:      # a type DuckDB cannot count: no evidence, no guess from data
        st.rows = con.execute(f"SELECT count(*) FROM {relation}").fetchone()[0]
        return
    st.rows = counts[0]
    for i, col in enumerate(st.columns):
        col.non_null, col.distinct = counts[2 * i + 1], counts[2 * i + 2]
    listed = [c for c in st.columns if type_kind(c.type) in ("int", "string", "id") and c.distinct <= VALUE_SET_CAP]
    if not listed:
        return
    values = con.execute("SELECT " + ", ".join(
        f"list(DISTINCT CAST({_quote_ident(c.name)} AS VARCHAR)) FILTER (WHERE {_quote_ident(c.name)} IS NOT NULL)"
        for c in listed) + f" FROM {relation}").fetchone()
    _profile_grain(con, relation, st)
    few = []
    for col, found in zip(listed, values):
        col.value_set = frozenset(found or ())
        if col.type in TEXT_TYPES and 0 < col.distinct <= ENUM_MAX_VALUES:
            col.values = tuple(sorted(col.value_set))
            few.append(col)
    if few:   # rows per value: an enum is closed only when no value was seen just once
        counts = con.execute("SELECT " + ", ".join(
            f"histogram({_quote_ident(c.name)})" for c in few) + f" FROM {relation}").fetchone()
        for col, hist in zip(few, counts):
            col.value_counts = {str(k): int(v) for k, v in (hist or {}).items()}


def _profile_grain(con, relation: str, st: SourceTable) -> None:
    """With no column unique and never null: the smallest set of id, version and date
    columns that is (up to 3 columns, the first found by a fixed order), into ``st.unique_sets``."""
    import itertools

    import duckdb

    from craftc.importer.conventions import is_id_like, is_version_column

    if not st.rows or any(c.distinct == c.non_null == st.rows and is_id_like(c.name) for c in st.columns):
        return
    dims = [c for c in st.columns if c.non_null == st.rows and (
        is_id_like(c.name) or is_version_column(c.name) or type_kind(c.type) in ("date", "timestamp"))]
    for size in (2, 3):
        for combo in itertools.combinations(dims[:6], size):
            cols = ", ".join(_quote_ident(c.name) for c in combo)
            try:
                n = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {cols} FROM {relation})").fetchone()[0]
            except duckdb.Error:
                continue
            if n == st.rows:
                st.unique_sets.append(tuple(c.name for c in combo))
                return


# ------------------------------------------------------------------ SQL DDL


def read_ddl(path: Path, dialect: str) -> list[SourceTable]:
    """CREATE TABLE statements (and COMMENT ON) parsed with sqlglot in ``dialect``."""
    import sqlglot
    from sqlglot import exp

    shown = path.as_posix()
    if dialect not in DDL_DIALECTS:
        raise _fail("E905", f"unsupported SQL dialect `{dialect}`", shown,
                    help=f"use one of: {', '.join(DDL_DIALECTS)}")
    text = _read_text(path)
    try:
        statements = sqlglot.parse(text, read=dialect, error_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise _fail("E906", f"cannot parse `{shown}` as {dialect} SQL: {err.get('description', exc)}",
                    shown, err.get("line") or 1, err.get("col") or 1,
                    help="check the statement near this place, or pass the right --dialect") from None
    tables: dict[str, SourceTable] = {}
    comments: list = []
    for stmt in statements:
        if stmt is None:
            continue
        if isinstance(stmt, exp.Create) and stmt.kind == "TABLE":
            st = _ddl_table(stmt, text, shown)
            tables[st.name] = st
        elif isinstance(stmt, exp.Comment):
            comments.append(stmt)
        else:
            raise _fail("E907", f"unsupported SQL statement in `{shown}`: "
                        f"`{stmt.sql(dialect=dialect)[:60]}`", shown, _line_of(text, stmt.sql()[:20]),
                        help="keep only CREATE TABLE and COMMENT ON statements in the DDL file")
    for c in comments:
        _apply_comment(c, tables)
    if not tables:
        raise _fail("E904", f"`{shown}` has no CREATE TABLE statements to import", shown,
                    help="pass a DDL file with CREATE TABLE statements")
    return list(tables.values())


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail("E903", f"cannot read `{path.as_posix()}`: {exc}", path.as_posix(),
                    help="check the file exists, is readable and is UTF-8 text") from None


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _table_name(table) -> str:
    parts = [p for p in (table.catalog, table.db, table.name) if p]
    if len(parts) > 1 and parts[-2] == "main":
        parts = parts[-1:]
    return ".".join(parts)


def _ddl_table(stmt, text: str, shown: str) -> SourceTable:
    from sqlglot import exp

    schema = stmt.this
    table = schema.this if isinstance(schema, exp.Schema) else schema
    st = SourceTable(name=_table_name(table), line=_line_of(text, table.name))
    prop = stmt.find(exp.SchemaCommentProperty)
    if prop is not None:
        st.comment = prop.this.name
    defs = schema.expressions if isinstance(schema, exp.Schema) else []
    for item in defs:
        if isinstance(item, exp.ColumnDef):
            col = SourceColumn(name=item.name, type=(item.kind.sql("duckdb").upper() if item.kind else "VARCHAR"))
            for cons in item.constraints:
                kind = cons.kind
                if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
                    col.nullable = False
                elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
                    st.primary_key = (col.name,)
                    col.nullable = False
                elif isinstance(kind, exp.UniqueColumnConstraint):
                    st.unique.add(col.name)
                elif isinstance(kind, exp.CommentColumnConstraint):
                    col.comment = kind.this.name
                elif isinstance(kind, exp.Reference):
                    ref = kind.this
                    target = ref.this if isinstance(ref, exp.Schema) else ref
                    ref_cols = [e.name for e in ref.expressions] if isinstance(ref, exp.Schema) else []
                    st.foreign_keys.append((col.name, _table_name(target), ref_cols[0] if ref_cols else ""))
            st.columns.append(col)
        elif isinstance(item, exp.PrimaryKey):
            st.primary_key = tuple(e.name for e in item.expressions)
        elif isinstance(item, exp.ForeignKey):
            ref = item.args.get("reference")
            target = ref.this if ref is not None else None
            if target is not None and len(item.expressions) == 1:
                table_expr = target.this if isinstance(target, exp.Schema) else target
                ref_cols = [e.name for e in target.expressions] if isinstance(target, exp.Schema) else []
                st.foreign_keys.append((item.expressions[0].name, _table_name(table_expr),
                                        ref_cols[0] if ref_cols else ""))
    if not st.columns:
        raise _fail("E908", f"table `{st.name}` in `{shown}` has no columns", shown, st.line,
                    help="declare at least one column, or drop the table from the DDL")
    return st


def _apply_comment(stmt, tables: dict[str, SourceTable]) -> None:
    from sqlglot import exp

    kind = (stmt.args.get("kind") or "").upper()
    text = stmt.expression.name if stmt.expression is not None else ""
    target = stmt.this
    if kind == "TABLE" and isinstance(target, exp.Table):
        st = tables.get(_table_name(target))
        if st:
            st.comment = text
    elif kind == "COLUMN" and isinstance(target, exp.Column):
        parts = [p for p in (target.args.get("catalog"), target.args.get("db"), target.args.get("table")) if p]
        st = tables.get(".".join(p.name for p in parts))
        for col in st.columns if st else ():
            if col.name == target.name:
                col.comment = text
