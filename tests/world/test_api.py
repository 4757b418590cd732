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


def test_a_field_on_the_wrong_alias_names_its_view_and_where_the_field_is(api):
    # `a.cost`: the advertiser has no cost, the joined daily_stat does. The message must not
    # suggest `cost` back to the code that wrote it, it says which view lacks it and which has it.
    sql = ("SELECT a.name, a.cost FROM daily_stat s JOIN ad ON ad.id = s.ad_id "
           "JOIN ad_group g ON g.id = ad.ad_group_id JOIN campaign c ON c.id = g.campaign_id "
           "JOIN advertiser a ON a.id = c.advertiser_id")
    with pytest.raises(UnknownFieldError) as raised:
        api.query(sql)
    message = str(raised.value)
    assert message.startswith("unknown field `cost` of `advertiser`"), message
    assert "did you mean" not in message, "a near name of the wrong view would mislead"
    assert "`cost` is a field of `daily_stat` (as `s`) (" in message
    assert "api.describe('advertiser')" in message


def test_a_view_read_under_an_alias_and_again_bare_in_a_subquery_is_named_once(api):
    with pytest.raises(UnknownFieldError) as raised:
        api.query("SELECT c.date FROM daily_stat s JOIN ad ON ad.id = s.ad_id JOIN ad_group g ON g.id = ad.ad_group_id "
                  "JOIN campaign c ON c.id = g.campaign_id WHERE s.date > (SELECT max(date) FROM daily_stat) - 7")
    assert "`date` is a field of `daily_stat` (as `s`) (" in str(raised.value), str(raised.value)


@pytest.mark.parametrize("sql, error, says", [
    # A near name is looked for in the view behind the alias, not in every view the query reads.
    ("SELECT c.nam FROM campaign c JOIN daily_stat s ON true",
     UnknownFieldError, "unknown field `nam` of `campaign`: did you mean `name`"),
    ("SELECT daily_budget FROM advertiser",
     UnknownFieldError, "`daily_budget` is a field of `campaign`, which this query does not read"),
    ("SELECT k.text FROM campaign c JOIN ad_group g ON g.campaign_id = c.id",
     QueryError, r'table "k" not found.*FROM and JOINs name `campaign` \(as `c`\), `ad_group` \(as `g`\)'),
    ("SELECT c.name FROM campaign c JOIN ad_group g ON g.campaign_id = a.id JOIN advertiser a ON a.id = c.advertiser_id",
     QueryError, "`a` is `advertiser`, defined in another part of the query: a JOIN's ON"),
    # DuckDB reports `g.x` inside a subquery as `Referenced table "g" not found`.
    ("SELECT c.name FROM campaign c WHERE c.id IN (SELECT g.campaign_id FROM ad_group g WHERE g.x = 1)",
     UnknownFieldError, "unknown field `x` of `ad_group`"),
], ids=["misspelt-on-an-alias", "in-a-view-not-read", "alias-never-joined", "alias-joined-later", "subquery-field"])
def test_a_misnamed_field_or_alias_is_reported_with_what_to_use(api, sql, error, says):
    with pytest.raises(error, match=says):
        api.query(sql)


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
