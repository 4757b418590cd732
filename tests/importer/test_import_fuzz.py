"""Whatever a warehouse looks like, `craftc import` writes a spec that `craftc check` accepts.

500 warehouses are generated from fixed seeds: tables and columns named with the
language's keywords, names that clash (`id` twice, `campaign` next to `campaign_id`,
`customer` in two schemas), unicode and odd characters; data that is empty, null,
repeating or unique; and connector-shaped tables under a common prefix: SCD2 history
tables versioned by a modification time, daily reports with no id. Each is imported
in-process and the spec is checked; the binding SQL compiled from it must also run
against the very warehouse it describes, with one row per key in a history entity's
view and a unique grain.
"""

import random
import time

import duckdb
import pytest

from craftc.emit.binding_sql import binding_sql
from craftc.frontend import load_schema
from craftc.importer import import_tables
from craftc.importer.sources import read_duckdb_connection

import os

# 500 by default; CRAFT_FUZZ_WAREHOUSES lowers it where CPU is short (the full run is documented).
WAREHOUSES = int(os.environ.get("CRAFT_FUZZ_WAREHOUSES", "500"))
TABLE_NAMES = ["customer", "customers", "Customer", "order", "orders", "table", "key", "ref", "entity",
               "select", "group", "campaign", "campaign_history", "ad_stats", "Ümsatz", "客户", "café",
               "2nd table", "a-b", "__", "x", "order_items", "dim_campaign", "schema", "doc", "CamelCase",
               "ad", "ads", "stats", "history", "id"]
SCHEMAS = ["main", "main", "main", "raw", "table", "Ümlaut", "2x", "ads"]
COLUMN_NAMES = ["id", "ID", "Id", "table", "key", "ref", "doc", "field", "column", "scale", "nullable",
                "campaign", "campaign_id", "customer_id", "order_id", "ad_id", "ad", "id_", "c", "valid_from",
                "valid_to", "_fivetran_synced", "updated_at", "cost_micros", "cost", "price_cents", "名前",
                "2col", "a b", "status", "type", "enum", "int", "one_of", "uses", "in", "from", "or",
                "customer", "customer_ref", "x_id", "Ümsatz_id", "stats_id", "history_id", "amount"]
TYPES = ["INTEGER", "BIGINT", "VARCHAR", "VARCHAR", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP", "DECIMAL(10,2)"]
WORDS = ["PAUSED", "ENABLED", "table", "key", "a b", "x", "ü", "in", "", "one_of", "ref", "Z9", "_"]


def _value(rng: random.Random, sql_type: str, row: int):
    if rng.random() < 0.15:
        return None
    if sql_type in ("INTEGER", "BIGINT"):
        return rng.choice([row, row, rng.randint(0, 5), rng.randint(0, 50)])
    if sql_type == "VARCHAR":
        return rng.choice(WORDS + [f"v{row}", str(rng.randint(0, 5))])
    if sql_type in ("DOUBLE", "DECIMAL(10,2)"):
        return round(rng.uniform(0, 100), 2)
    if sql_type == "BOOLEAN":
        return rng.random() < 0.5
    if sql_type == "DATE":
        return f"2024-01-{rng.randint(1, 28):02d}"
    return f"2024-01-{rng.randint(1, 28):02d} 0{rng.randint(0, 9)}:00:00"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _empty(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the previous warehouse: one connection for all of them (connecting costs ~50 ms)."""
    for (view,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall():
        con.execute(f"DROP VIEW {_ident(view)}")
    for schema, table in con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall():
        con.execute(f"DROP TABLE {_ident(schema)}.{_ident(table)} CASCADE")
    for (schema,) in con.execute("SELECT DISTINCT schema_name FROM duckdb_schemas() WHERE NOT internal "
                                 "AND schema_name <> 'main' AND database_name = current_database()").fetchall():
        con.execute(f"DROP SCHEMA {_ident(schema)} CASCADE")


HISTORY_VERSIONS = ["modified_time", "last_modified_time", "updated_at", "_fivetran_synced", "valid_from"]
PREFIXES = ["pw_", "tt_", "ads_", ""]


def _shaped_table(con: duckdb.DuckDBPyConnection, rng: random.Random, prefix: str) -> None:
    """A connector-shaped table: an SCD2 history (the id repeats, one row per version) or a
    daily report with no id (one row per date and dimension, dimensions that may repeat)."""
    name = prefix + rng.choice(["campaign", "ad_group", "ad", "advertiser", "keyword"])
    ids = list(range(1, rng.randint(1, 8)))
    if rng.random() < 0.5:
        version = rng.choice(HISTORY_VERSIONS)
        table = f"{name}_history"
        rows = [[i, f"2024-01-{v + 1:02d} 10:00:00", rng.choice(["ACTIVE", "PAUSED", None]), rng.choice(ids or [1])]
                for i in ids for v in range(rng.randint(1, 3))]
        cols = f'id BIGINT, {_ident(version)} TIMESTAMP, status VARCHAR, parent_id BIGINT'
    else:
        table = f"{name}_report_daily"
        dims = rng.choice([["campaign_id"], ["ad_group_id", "campaign_id"], ["ad_id"]])
        rows = [[f"2024-02-{d + 1:02d}", *[rng.choice(ids or [1]) if k else i for k in range(len(dims))],
                 rng.randint(0, 99), rng.choice([None, 1.5])]
                for d in range(rng.randint(1, 6)) for i in (ids or [1])]
        cols = "date DATE, " + ", ".join(f"{d} BIGINT" for d in dims) + ", clicks BIGINT, spend_micros DOUBLE"
    try:
        con.execute(f"CREATE TABLE {_ident(table)} ({cols})")
    except duckdb.CatalogException:
        return
    if rows:
        one = "(" + ", ".join("?" * len(rows[0])) + ")"
        con.execute(f"INSERT INTO {_ident(table)} VALUES " + ", ".join([one] * len(rows)),
                    [v for row in rows for v in row])


def _warehouse(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    rng = random.Random(seed)
    _empty(con)
    prefix = rng.choice(PREFIXES)
    for _ in range(rng.choice([0, 0, 1, 2, 3])):
        _shaped_table(con, rng, prefix)
    for _ in range(rng.randint(1, 5)):
        schema, table = rng.choice(SCHEMAS), rng.choice(TABLE_NAMES)
        columns: dict[str, str] = {}
        for _ in range(rng.randint(1, 8)):
            name = rng.choice(COLUMN_NAMES)
            if name.lower() not in {c.lower() for c in columns}:
                columns[name] = rng.choice(TYPES)
        keyable = [c for c, t in columns.items() if t in ("INTEGER", "BIGINT", "VARCHAR")]
        key = rng.choice(keyable) if keyable and rng.random() < 0.25 else None
        defs = ", ".join(f"{_ident(c)} {t}" + (" PRIMARY KEY" if c == key else "") for c, t in columns.items())
        try:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {_ident(schema)}")
            con.execute(f"CREATE TABLE {_ident(schema)}.{_ident(table)} ({defs})")
        except duckdb.CatalogException:
            continue                      # the same table drawn twice
        rows = [[(row if t != "VARCHAR" else f"k{row}") if c == key else _value(rng, t, row)
                 for c, t in columns.items()] for row in range(rng.choice([0, 1, 3, 12, 40]))]
        if rows:    # one statement per table: row-by-row inserts would dominate the run time
            one = "(" + ", ".join("?" * len(columns)) + ")"
            con.execute(f"INSERT INTO {_ident(schema)}.{_ident(table)} VALUES " + ", ".join([one] * len(rows)),
                        [v for row in rows for v in row])


def _identity_holds(con: duckdb.DuckDBPyConnection, schema) -> tuple[int, int]:
    """Each history entity's view has one row per key, each grain is unique: (histories, grains) seen."""
    histories = grains = 0
    for e in schema.entities:
        columns = (e.key.name,) if e.history is not None else e.grain
        if not columns:
            continue
        listed = ", ".join(_ident(c) for c in columns)
        rows, distinct = con.execute(f"SELECT count(*), count(DISTINCT ({listed})) FROM {_ident(e.view)}").fetchone()
        assert rows == distinct, f"{e.name}: {rows} rows but {distinct} distinct ({listed})"
        histories, grains = histories + (e.history is not None), grains + bool(e.grain)
    return histories, grains


def test_every_imported_warehouse_passes_check_and_binds(tmp_path):
    started, cpu = time.perf_counter(), time.process_time()
    imported = histories = grains = 0
    con = duckdb.connect(config={"threads": 1})
    for seed in range(WAREHOUSES):
        _warehouse(con, seed)
        if not con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0]:
            continue
        tables = read_duckdb_connection(con, f"fuzz{seed}.duckdb")
        spec = tmp_path / f"fuzz{seed}.craft"
        spec.write_text(import_tables(tables, f"fuzz{seed}", f"fuzz{seed}.duckdb"))
        load = load_schema(spec)
        assert load.ok and {d.code for d in load.diagnostics} <= {"W115"}, f"seed {seed}:\n{load.render()}\n{spec.read_text()}"
        try:
            con.execute(binding_sql(load.schema))
        except duckdb.Error as exc:
            pytest.fail(f"seed {seed}: the binding does not run: {exc}\n{spec.read_text()}")
        seen = _identity_holds(con, load.schema)
        histories, grains = histories + seen[0], grains + seen[1]
        imported += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"\n{imported} warehouses imported and checked in {elapsed:.1f} s ({cpu:.1f} s CPU); "
          f"{histories} history entities, {grains} entities with a grain")
    assert imported > WAREHOUSES * 0.9
    # the connector-shaped tables do reach the language: both kinds in one warehouse in ten at least
    assert histories > WAREHOUSES / 10 and grains > WAREHOUSES / 10, (histories, grains)
