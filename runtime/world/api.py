"""The beta Ads API: what agent code and reference solutions call to read the warehouse.

Agent code sees an instance as ``api``. Every read goes through the logical views
(``campaign``, ``daily_stat``, ...), never the physical tables, so a physical rename
in the schema spec changes the binding and nothing the agent wrote. Mistakes come
back as :class:`ApiError` subclasses whose message names the closest valid name,
because a model repairs its code from that message.

Example (not run here: needs the warehouse a world step built)::

    api = connect("runs/ads/world/warehouse.duckdb")
    api.query("SELECT name FROM campaign WHERE status = ?", ["enabled"])   # a DataFrame
"""

from __future__ import annotations

import difflib
import re
import weakref
from pathlib import Path

import duckdb
import pandas as pd
import sqlglot
from sqlglot import exp

__all__ = [
    "WarehouseApi", "connect",
    "ApiError", "UnknownEntityError", "UnknownFieldError", "ForbiddenQueryError", "QueryError",
    "CATALOG_SCHEMA",
]

CATALOG_SCHEMA = "craft_meta"
"""Schema holding the entity and field catalog the world step writes (docs, logical types)."""

# DuckDB's binder errors for a column it cannot bind, qualified (`Table "a" does not have a column
# named "cost"`, `Values list "a" ...` for a view) or not.
_NO_COLUMN_OF = re.compile(r'"([^"]+)" does not have a column named "([^"]+)"')
_NO_COLUMN = re.compile(r'column "([^"]+)" not found')
_NO_TABLE = re.compile(r'Referenced table "([^"]+)" not found')


class ApiError(Exception):
    """Any refused or failed API call; the message says what was wrong and what to use."""


class UnknownEntityError(ApiError):
    """A query or call named an entity (view) the warehouse does not expose."""


class UnknownFieldError(ApiError):
    """A query or call named a field an entity does not have."""


class ForbiddenQueryError(ApiError):
    """A statement that is not a read of the logical views (a write, DDL, a file read)."""


class QueryError(ApiError):
    """A read that DuckDB rejected for another reason (types, syntax, grouping)."""


def connect(db_path: str | Path) -> "WarehouseApi":
    """Open a warehouse file read-only and wrap it in the API."""
    path = Path(db_path)
    if not path.exists():
        raise ApiError(f"warehouse `{path}` does not exist; build it with `craftc run PLAN_DIR --only world`")
    return WarehouseApi(duckdb.connect(str(path), read_only=True))


class WarehouseApi:
    """Read-only access to the logical views of one warehouse.

    Args:
        con: a DuckDB connection to the warehouse, opened read-only by the caller.

    Attributes:
        calls: the name of every call made (``query``, ``table``, ``list_entities``,
            ``describe``), in order; evaluation counts schema-discovery loops from it.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self._con = con
        self.calls: list[str] = []
        self._entities, self._fields = _catalog_of(con)
        self._views = list(self._entities["view"])
        self._physical_tables = {
            str(t).lower(): v for t, v in zip(self._entities["table_name"], self._entities["view"]) if t
        }

    # ------------------------------------------------------------------ discovery

    def list_entities(self) -> pd.DataFrame:
        """Every entity the API exposes: ``view`` (the name to query), ``entity``, ``doc``."""
        self.calls.append("list_entities")
        return self._entities[["view", "entity", "doc"]].reset_index(drop=True).copy()

    def describe(self, entity: str) -> pd.DataFrame:
        """The fields of one entity: ``field``, ``type``, ``doc``, ``nullable``, ``references``."""
        self.calls.append("describe")
        view = self._resolve_view(entity)
        frame = self._fields[self._fields["view"] == view]
        return frame[["field", "type", "doc", "nullable", "references"]].reset_index(drop=True).copy()

    # ------------------------------------------------------------------ reads

    def query(self, sql: str, params: list | dict | None = None) -> pd.DataFrame:
        """Run one SELECT (or WITH ... SELECT) over the logical views.

        Args:
            sql: the query; ``?`` or ``$name`` placeholders are bound from ``params``.
            params: positional list or named dict of values for the placeholders.

        Returns:
            The result as a DataFrame.

        Raises:
            ForbiddenQueryError: a write, DDL, several statements or a file read.
            UnknownEntityError: a name that is not a logical view.
            UnknownFieldError: a column a view does not have.
            QueryError: any other error DuckDB reports.
        """
        self.calls.append("query")
        return self._run(sql, params)

    def table(self, entity: str, columns: list[str] | None = None, where: str | None = None) -> pd.DataFrame:
        """Rows of one entity, optionally only some ``columns`` and rows matching ``where``.

        Example: ``api.table("campaign", ["id", "name"], "status = 'enabled'")``.
        """
        self.calls.append("table")
        view = self._resolve_view(entity)
        known = list(self._fields.loc[self._fields["view"] == view, "field"])
        for column in columns or ():
            if column not in known:
                raise UnknownFieldError(_unknown_field_message(column, view, known))
        select = ", ".join(f'"{c}"' for c in columns) if columns else "*"
        sql = f'SELECT {select} FROM "{view}"' + (f" WHERE {where}" if where else "")
        return self._run(sql, None)

    # ------------------------------------------------------------------ internals

    def _resolve_view(self, entity: str) -> str:
        """Accept a view name (``ad_group``) or an entity name (``AdGroup``)."""
        if entity in self._views:
            return entity
        by_name = dict(zip(self._entities["entity"], self._entities["view"]))
        if entity in by_name:
            return by_name[entity]
        raise UnknownEntityError(self._unknown_entity_message(entity))

    def _unknown_entity_message(self, name: str) -> str:
        logical = self._physical_tables.get(name.lower())
        if logical:
            return f"`{name}` is a physical table, not part of the API; query the logical view `{logical}`"
        return f"unknown entity `{name}`{_did_you_mean(name, self._views)} (api.list_entities() lists them)"

    def _run(self, sql: str, params) -> pd.DataFrame:
        tree = self._check_statement(sql)
        try:
            return self._con.execute(sql, params).df() if params is not None else self._con.execute(sql).df()
        except duckdb.BinderException as error:
            raise self._reword_binder_error(str(error), tree) from None
        except duckdb.CatalogException as error:
            raise QueryError(_first_line(str(error))) from None
        except duckdb.Error as error:
            raise QueryError(_first_line(str(error))) from None

    def _check_statement(self, sql: str) -> exp.Expression:
        if not isinstance(sql, str) or not sql.strip():
            raise ForbiddenQueryError("query() needs a non-empty SQL string")
        try:
            statements = [s for s in sqlglot.parse(sql, dialect="duckdb") if s is not None]
        except sqlglot.errors.SqlglotError as error:
            raise QueryError(f"SQL syntax error: {_first_line(str(error))}") from None
        if len(statements) != 1:
            raise ForbiddenQueryError(f"query() runs exactly one statement, got {len(statements)}")
        tree = statements[0]
        if not isinstance(tree, exp.Query):
            kind = tree.key.upper()
            raise ForbiddenQueryError(f"only SELECT (or WITH ... SELECT) is allowed, not {kind}: the warehouse is read-only")
        for node in tree.walk():
            if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Alter, exp.Command)):
                raise ForbiddenQueryError(f"only reads are allowed, found {node.key.upper()}: the warehouse is read-only")
        ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            self._check_table(table, ctes)
        return tree

    def _check_table(self, table: exp.Table, ctes: set[str]) -> None:
        if not isinstance(table.this, exp.Identifier):
            raise ForbiddenQueryError(
                f"table functions such as `{table.this.sql(dialect='duckdb')[:40]}` are not allowed; "
                "read the logical views (api.list_entities())"
            )
        qualified = ".".join(part for part in (table.catalog, table.db, table.name) if part)
        if table.db or table.catalog:
            raise UnknownEntityError(self._unknown_entity_message(qualified))
        if table.name not in ctes and table.name not in self._views:
            raise UnknownEntityError(self._unknown_entity_message(table.name))

    def _reword_binder_error(self, message: str, tree: exp.Expression) -> ApiError:
        qualified = _NO_COLUMN_OF.search(message)
        match = qualified or _NO_COLUMN.search(message)
        read = _views_by_alias(tree, self._views)
        if not match:
            missing = _NO_TABLE.search(message)
            if missing and read:
                return self._missing_alias(_first_line(message), missing.group(1), read, tree)
            return QueryError(_first_line(message))
        column = match.group(2) if qualified else match.group(1)
        views = list(dict.fromkeys(read.values()))
        # `a.cost` names the view the code meant: DuckDB says which alias lacks the column.
        owner = read.get(qualified.group(1)) if qualified else (views[0] if len(views) == 1 else None)
        return self._unknown_field(column, owner, read)

    def _missing_alias(self, first_line: str, name: str, read: dict[str, str], tree: exp.Expression) -> ApiError:
        """DuckDB's `Referenced table "k" not found!`, with what the query does define."""
        if name not in read:
            # `k.text` where no `keyword k` was joined: say which names the query does define.
            return QueryError(f"{first_line} The query's FROM and JOINs name {_aliases(read)}")
        # Inside a subquery DuckDB reports `g.x`, a field `g` lacks, as `g` not found.
        known = set(self._fields.loc[self._fields["view"] == read[name], "field"])
        unknown = [c.name for c in tree.find_all(exp.Column) if c.table == name and c.name not in known]
        if unknown:
            return self._unknown_field(unknown[0], read[name], read)
        return QueryError(f"{first_line} `{name}` is `{read[name]}`, defined in another part of the query: a JOIN's "
                          "ON reads only the tables joined before it, and a subquery only its own and the enclosing "
                          "query's")

    def _unknown_field(self, column: str, owner: str | None, read: dict[str, str]) -> UnknownFieldError:
        """``column`` is no field of ``owner`` (None: of no view the query reads, by ``read``'s names)."""
        pool = [owner] if owner else list(dict.fromkeys(read.values()))
        candidates = self._fields[self._fields["view"].isin(pool)] if pool else self._fields
        physical = candidates[candidates["column_name"].str.lower() == column.lower()]
        if len(physical):
            row = physical.iloc[0]
            return UnknownFieldError(
                f"`{column}` is a physical column, not part of the API; use the field `{row['field']}` of `{row['view']}`"
            )
        owners = list(self._fields.loc[self._fields["field"] == column, "view"])
        in_query = {alias: view for alias, view in read.items() if view in owners}
        if in_query:
            # The field is right, its alias is not: a near name of the wrong view would mislead.
            return UnknownFieldError(_unknown_field_message(
                column, owner, [], f"; `{column}` is a field of {_aliases(in_query)}"))
        fields = [f for f in dict.fromkeys(candidates["field"]) if f != column]
        elsewhere = ""
        if owners:
            shown = ", ".join(f"`{v}`" for v in owners[:3]) + (", ..." if len(owners) > 3 else "")
            elsewhere = f"; `{column}` is a field of {shown}, which this query does not read"
        return UnknownFieldError(_unknown_field_message(column, owner, fields, elsewhere))


def _views_by_alias(tree: exp.Expression, views: list[str]) -> dict[str, str]:
    """The logical views a query reads, keyed by the name its columns use (alias, else the view)."""
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    return {t.alias_or_name: t.name for t in tree.find_all(exp.Table) if t.name in views and t.name not in ctes}


def _aliases(read: dict[str, str]) -> str:
    """Views as the query names them, for a message: `daily_stat` (as `s`), `ad`. A view read
    under its alias and again bare (a subquery's `SELECT max(date) FROM daily_stat`) once."""
    aliased = {view for alias, view in read.items() if alias != view}
    return ", ".join(f"`{view}`" + (f" (as `{alias}`)" if alias != view else "")
                     for alias, view in read.items() if alias != view or view not in aliased)


# Catalogs of read-only connections, by connection: a read-only warehouse's catalog
# cannot change, and the sandbox builds one API per job over the same connection
# (loaded once in the worker, each job process inherits it instead of querying it).
# Weak keys: caching must not keep a connection, and its file, open.
_CATALOGS: "weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[pd.DataFrame, pd.DataFrame]]" = (
    weakref.WeakKeyDictionary())


def _catalog_of(con) -> tuple[pd.DataFrame, pd.DataFrame]:
    cached = _CATALOGS.get(con)
    if cached is not None:
        return cached
    entities, fields = _load_catalog(con)
    read_only = con.execute("SELECT bool_and(readonly) FROM duckdb_databases() WHERE NOT internal").fetchone()[0]
    if read_only:
        _CATALOGS[con] = (entities, fields)
    return entities, fields


def _load_catalog(con) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Entities and fields from the catalog tables the world step wrote."""
    try:
        entities = con.execute(
            f"SELECT view, entity, doc, table_name FROM {CATALOG_SCHEMA}.entities ORDER BY position"
        ).df()
        fields = con.execute(
            f"SELECT view, field, type, doc, nullable, \"references\", column_name "
            f"FROM {CATALOG_SCHEMA}.fields ORDER BY view_position, position"
        ).df()
    except duckdb.CatalogException:
        raise ApiError(
            f"the warehouse has no `{CATALOG_SCHEMA}` catalog; rebuild it with `craftc run PLAN_DIR --only world`"
        ) from None
    return entities, fields


def _did_you_mean(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name.lower(), candidates, n=1, cutoff=0.5)
    return f": did you mean `{close[0]}`?" if close else ""


def _unknown_field_message(column: str, view: str | None, fields: list[str], elsewhere: str = "") -> str:
    """``elsewhere`` names the views that do have the field (``; `cost` is a field of `daily_stat` (as `s`)``)."""
    where = f" of `{view}`" if view else ""
    hint = f"api.describe('{view}')" if view else "api.describe(entity)"
    return f"unknown field `{column}`{where}{_did_you_mean(column, fields)}{elsewhere} ({hint} lists the fields)"


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else message
