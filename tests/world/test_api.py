"""The Ads API: reads through logical views only, errors that say what to use instead."""

from __future__ import annotations

import duckdb
import pytest

from runtime.world.api import (
    ForbiddenQueryError, QueryError, UnknownEntityError, UnknownFieldError, WarehouseApi, connect,
)


def test_query_reads_logical_views_and_binds_params(api):
    frame = api.query("SELECT id, name FROM campaign WHERE status = ? ORDER BY id", ["enabled"])
    assert list(frame.columns) == ["id", "name"]
    assert len(frame) > 10


def test_with_queries_and_ctes_are_allowed(api):
    frame = api.query("WITH big AS (SELECT ad_id, sum(cost) AS spend FROM daily_stat GROUP BY ad_id) "
                      "SELECT count(*) AS n FROM big WHERE spend > 0")
    assert frame["n"][0] > 0


def test_unknown_entity_names_the_closest_view(api):
    with pytest.raises(UnknownEntityError, match="unknown entity `campaigns`: did you mean `campaign`"):
        api.query("SELECT * FROM campaigns")


def test_physical_table_is_refused_with_its_logical_view(api):
    with pytest.raises(UnknownEntityError, match="`adw.cmp_dim` is a physical table.*`campaign`"):
        api.query("SELECT * FROM adw.cmp_dim")


def test_unknown_field_names_the_closest_field(api):
    with pytest.raises(UnknownFieldError, match="unknown field `nam` of `campaign`: did you mean `name`"):
        api.query("SELECT nam FROM campaign")


def test_physical_column_is_refused_with_its_logical_field(api):
    with pytest.raises(UnknownFieldError, match="`cmp_nm` is a physical column.*field `name` of `campaign`"):
        api.query("SELECT cmp_nm FROM campaign")


@pytest.mark.parametrize("sql", [
    "INSERT INTO campaign (id) VALUES (1)",
    "DELETE FROM campaign",
    "UPDATE campaign SET name = 'x'",
    "CREATE TABLE t AS SELECT 1",
    "DROP VIEW campaign",
    "ATTACH 'other.duckdb'",
    "COPY campaign TO 'out.csv'",
    "SELECT 1; DROP VIEW campaign",
])
def test_writes_and_non_reads_are_rejected(api, sql):
    with pytest.raises(ForbiddenQueryError):
        api.query(sql)


def test_table_functions_are_rejected(api):
    with pytest.raises(ForbiddenQueryError, match="table functions"):
        api.query("SELECT * FROM read_csv('/etc/passwd')")


def test_catalog_and_system_tables_are_not_readable(api):
    with pytest.raises(UnknownEntityError):
        api.query("SELECT * FROM craft_meta.fields")
    with pytest.raises(UnknownEntityError):
        api.query("SELECT * FROM information_schema.tables")


def test_the_connection_itself_is_read_only(warehouse):
    api = connect(warehouse)
    with pytest.raises(duckdb.Error):
        api._con.execute("DROP VIEW campaign")


def test_other_sql_errors_are_query_errors(api):
    with pytest.raises(QueryError):
        api.query("SELECT name, count(*) FROM campaign")


def test_table_selects_columns_and_filters(api):
    frame = api.table("Campaign", ["id", "status"], "status = 'paused'")
    assert list(frame.columns) == ["id", "status"] and set(frame["status"]) == {"paused"}
    with pytest.raises(UnknownFieldError, match="did you mean `status`"):
        api.table("campaign", ["statu"])


def test_discovery_lists_entities_and_describes_fields(api, ads_schema):
    entities = api.list_entities()
    assert list(entities.columns) == ["view", "entity", "doc"]
    assert len(entities) == 25 and "daily_stat" in set(entities["view"])
    fields = api.describe("campaign")
    assert list(fields.columns) == ["field", "type", "doc", "nullable", "references"]
    by_name = fields.set_index("field")
    assert by_name.loc["daily_budget", "type"] == "money"
    assert by_name.loc["status", "type"] == "enum(enabled, paused, archived)"
    assert by_name.loc["advertiser_id", "references"] == "advertiser"
    assert by_name.loc["is_active", "doc"].startswith("DEPRECATED")
    assert not fields["doc"].str.contains("cmp_|_micros").any(), "physical names leak into describe()"


def test_calls_are_recorded_in_order(api):
    api.list_entities()
    api.describe("ad")
    api.query("SELECT 1 AS one")
    api.table("geo")
    assert api.calls == ["list_entities", "describe", "query", "table"]


def test_describe_unknown_entity(api):
    with pytest.raises(UnknownEntityError, match="did you mean `ad_group`"):
        api.describe("adgroup")


def test_connect_to_missing_file_says_how_to_build_it(tmp_path):
    with pytest.raises(Exception, match="--only world"):
        connect(tmp_path / "nope.duckdb")


def test_a_warehouse_without_catalog_is_a_clear_error():
    with pytest.raises(Exception, match="craft_meta"):
        WarehouseApi(duckdb.connect())


def test_the_catalog_of_a_read_only_connection_is_read_once(warehouse):
    # The sandbox builds one API per job over the worker's connection; a read-only
    # warehouse's catalog cannot change, so later APIs reuse the first one's.
    con = duckdb.connect(str(warehouse), read_only=True)
    first, second = WarehouseApi(con), WarehouseApi(con)
    assert second._fields is first._fields and second._entities is first._entities


def test_the_catalog_cache_does_not_keep_a_connection_open(tmp_path, warehouse):
    import gc

    copy = tmp_path / "reopen.duckdb"
    copy.write_bytes(warehouse.read_bytes())
    WarehouseApi(duckdb.connect(str(copy), read_only=True))
    gc.collect()
    # Had the cache held the read-only connection, DuckDB would refuse a second,
    # differently configured connection to the same file in this process.
    duckdb.connect(str(copy)).execute("CREATE TABLE scratch AS SELECT 1 AS x")


def test_a_writable_connection_rereads_its_catalog(tmp_path, warehouse):
    copy = tmp_path / "writable.duckdb"
    copy.write_bytes(warehouse.read_bytes())
    con = duckdb.connect(str(copy))
    assert WarehouseApi(con)._fields is not WarehouseApi(con)._fields
