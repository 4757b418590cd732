"""A warehouse shaped like a connector's landing of an ad platform's raw tables, built by the tests.

Pinwheel is a made-up ad platform; every table carries its `pw_` prefix, as connectors
name them. History tables (SCD2) keep one row per change, versioned by `modified_time`
or `last_modified_time`, so every `id` repeats; daily report tables have no id at all,
one row per (date, campaign) or (date, ad group); a country code list is both a dbt seed
and a dbt source of the same relation. The dbt project beside it has property YAML,
target/manifest.json and target/catalog.json. Everything is generated from a fixed seed.
"""

from __future__ import annotations

import json
import random
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb

SCHEMA = "pinwheel"
STATUSES = ("ACTIVE", "PAUSED")


def _history(rng: random.Random, ids: list[int], versions: int, start: datetime) -> list[tuple[int, datetime]]:
    rows = []
    for i in ids:
        t = start + timedelta(hours=rng.randint(0, 48))
        for _ in range(versions):
            rows.append((i, t))
            t += timedelta(days=rng.randint(1, 9), minutes=rng.randint(0, 59))
    return rows


def build_warehouse(path: Path) -> Path:
    rng = random.Random(7)
    con = duckdb.connect(str(path))
    con.execute(f"CREATE SCHEMA {SCHEMA}")
    t0 = datetime(2024, 1, 1, 8)
    con.execute(f"CREATE TABLE {SCHEMA}.pw_advertiser_history (id BIGINT, name VARCHAR, currency VARCHAR, "
                "status VARCHAR, modified_time TIMESTAMP)")
    for i, t in _history(rng, [101, 102, 103], 3, t0):
        con.execute(f"INSERT INTO {SCHEMA}.pw_advertiser_history VALUES (?, ?, ?, ?, ?)",
                    [i, f"Advertiser {i}", "USD", rng.choice(STATUSES), t])
    con.execute(f"CREATE TABLE {SCHEMA}.pw_campaign_history (id BIGINT, advertiser_id BIGINT, name VARCHAR, "
                "status VARCHAR, budget_micros BIGINT, last_modified_time TIMESTAMP)")
    campaigns = list(range(2001, 2007))
    for i, t in _history(rng, campaigns, 2, t0):
        con.execute(f"INSERT INTO {SCHEMA}.pw_campaign_history VALUES (?, ?, ?, ?, ?, ?)",
                    [i, 101 + i % 3, f"Campaign {i}", rng.choice(STATUSES), rng.randint(10, 90) * 1_000_000, t])
    con.execute(f"CREATE TABLE {SCHEMA}.pw_ad_group_history (id BIGINT, campaign_id BIGINT, name VARCHAR, "
                "modified_time TIMESTAMP)")
    groups = {g: campaigns[g % len(campaigns)] for g in range(30001, 30011)}
    for i, t in _history(rng, list(groups), 2, t0):
        con.execute(f"INSERT INTO {SCHEMA}.pw_ad_group_history VALUES (?, ?, ?, ?)",
                    [i, groups[i], f"Ad group {i}", t])
    days = [date(2024, 2, 1) + timedelta(days=d) for d in range(38)]
    con.execute(f"CREATE TABLE {SCHEMA}.pw_campaign_report_daily (date DATE, campaign_id BIGINT, "
                "impressions BIGINT, clicks BIGINT, spend_micros BIGINT)")
    for d in days:
        for c in campaigns:
            imp = rng.randint(100, 5000)
            con.execute(f"INSERT INTO {SCHEMA}.pw_campaign_report_daily VALUES (?, ?, ?, ?, ?)",
                        [d, c, imp, rng.randint(0, imp // 20), rng.randint(0, 50) * 1_000_000])
    con.execute(f"CREATE TABLE {SCHEMA}.pw_ad_group_report_daily (date DATE, ad_group_id BIGINT, "
                "campaign_id BIGINT, impressions BIGINT, clicks BIGINT, spend_micros BIGINT)")
    for d in days[:10]:
        for g, c in groups.items():
            imp = rng.randint(10, 900)
            con.execute(f"INSERT INTO {SCHEMA}.pw_ad_group_report_daily VALUES (?, ?, ?, ?, ?, ?)",
                        [d, g, c, imp, rng.randint(0, imp // 20), rng.randint(0, 9) * 1_000_000])
    con.execute(f"CREATE TABLE {SCHEMA}.pw_country_codes (country_code VARCHAR, country_name VARCHAR)")
    con.executemany(f"INSERT INTO {SCHEMA}.pw_country_codes VALUES (?, ?)",
                    [["DE", "Germany"], ["FR", "France"], ["US", "United States"]])
    con.close()
    return path


def _columns(con, table: str) -> list[tuple[str, str]]:
    return con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = ? "
                       "AND table_name = ? ORDER BY column_index", [SCHEMA, table]).fetchall()


DOCS = {
    "pw_advertiser_history": "Each version of a Pinwheel advertiser account.",
    "pw_campaign_history": "Each version of a campaign.",
    "pw_ad_group_history": "Each version of an ad group.",
    "pw_campaign_report_daily": "Delivery of each campaign on each day.",
    "pw_ad_group_report_daily": "Delivery of each ad group on each day.",
    "pw_country_codes": "ISO country codes and names.",
}
COLUMN_DOCS = {
    ("pw_campaign_history", "budget_micros"): "Daily budget in micros of the advertiser currency.",
    ("pw_campaign_history", "status"): "One of ACTIVE, PAUSED or DELETED.",
}


def build_dbt_project(root: Path, warehouse: Path) -> Path:
    """A dbt project describing the warehouse: YAML, and the manifest and catalog of
    `dbt docs generate`, in which `pw_country_codes` is a seed and a source at once."""
    (root / "models").mkdir(parents=True)
    (root / "target").mkdir()
    (root / "dbt_project.yml").write_text("name: pinwheel_source\nversion: '1.0'\nconfig-version: 2\n")
    con = duckdb.connect(str(warehouse), read_only=True)
    nodes, sources, catalog_nodes, catalog_sources = {}, {}, {}, {}
    for table, doc in DOCS.items():
        cols = _columns(con, table)
        columns = {c: {"name": c, "description": COLUMN_DOCS.get((table, c), ""), "data_type": None}
                   for c, _ in cols}
        typed = {c: {"name": c, "type": t, "index": i + 1, "comment": None} for i, (c, t) in enumerate(cols)}
        meta = {"type": "BASE TABLE", "schema": SCHEMA, "name": table, "database": "warehouse", "comment": None}
        uid = f"source.pinwheel_source.pinwheel.{table}"
        sources[uid] = {"resource_type": "source", "unique_id": uid, "schema": SCHEMA, "name": table,
                        "identifier": table, "description": doc, "columns": columns}
        catalog_sources[uid] = {"metadata": meta, "columns": typed, "unique_id": uid}
        if table == "pw_country_codes":
            seed = "seed.pinwheel_source.pw_country_codes"
            nodes[seed] = {"resource_type": "seed", "unique_id": seed, "schema": SCHEMA, "name": table,
                           "alias": table, "description": "", "columns": {}}
            catalog_nodes[seed] = {"metadata": meta, "columns": typed, "unique_id": seed}
    con.close()
    test = "test.pinwheel_source.relationships_pw_campaign_history_advertiser_id"
    nodes[test] = {"resource_type": "test", "unique_id": test, "attached_node":
                   "source.pinwheel_source.pinwheel.pw_campaign_history", "column_name": "advertiser_id",
                   "depends_on": {"nodes": ["source.pinwheel_source.pinwheel.pw_advertiser_history",
                                            "source.pinwheel_source.pinwheel.pw_campaign_history"]},
                   "test_metadata": {"name": "relationships", "kwargs": {
                       "column_name": "advertiser_id", "to": "source('pinwheel', 'pw_advertiser_history')",
                       "field": "id"}}}
    version = "https://schemas.getdbt.com/dbt/{}/v12.json"
    (root / "target/manifest.json").write_text(json.dumps(
        {"metadata": {"dbt_schema_version": version.format("manifest")}, "nodes": nodes, "sources": sources},
        indent=1, sort_keys=True))
    (root / "target/catalog.json").write_text(json.dumps(
        {"metadata": {"dbt_schema_version": version.format("catalog")}, "nodes": catalog_nodes,
         "sources": catalog_sources}, indent=1, sort_keys=True))
    lines = ["version: 2", "sources:", "  - name: pinwheel", "    schema: pinwheel", "    tables:"]
    for table, doc in DOCS.items():
        lines += [f"      - name: {table}", f"        description: \"{doc}\"", "        columns:"]
        con = duckdb.connect(str(warehouse), read_only=True)
        for c, _ in _columns(con, table):
            lines.append(f"          - name: {c}")
            if (table, c) in COLUMN_DOCS:
                lines.append(f"            description: \"{COLUMN_DOCS[(table, c)]}\"")
        con.close()
    (root / "models/src_pinwheel.yml").write_text("\n".join(lines) + "\n")
    return root
