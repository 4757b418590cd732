"""The binding SQL and logical DDL: pure, deterministic, and checked against golden files.

Regenerate the golden files after an intended change with ``UPDATE_GOLDEN=1 pytest tests/world``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from craftc.emit.binding_sql import binding_sql, logical_ddl, scaled_column_sql

GOLDEN = Path(__file__).parent / "golden"


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; rerun with UPDATE_GOLDEN=1 if intended"


def test_binding_sql_matches_golden(ads_schema):
    _check_golden("ads_binding.sql", binding_sql(ads_schema))


def test_logical_ddl_matches_golden(ads_schema):
    _check_golden("ads_logical_ddl.sql", logical_ddl(ads_schema))


def test_one_view_per_entity_under_its_logical_name(ads_schema):
    sql = binding_sql(ads_schema)
    assert sql.count("CREATE OR REPLACE VIEW") == 25
    assert 'CREATE OR REPLACE VIEW "ad_group" AS' in sql
    assert '"adv_id" AS "advertiser_id"' in sql
    assert 'CAST("daily_budget_micros" AS DOUBLE) / 1000000 AS "daily_budget"' in sql


def test_logical_ddl_shows_no_physical_names(ads_schema):
    ddl = logical_ddl(ads_schema)
    assert "CREATE TABLE campaign (" in ddl and "-- A budgeted set of ad groups" in ddl
    for physical in ("adw.", "cmp_nm", "_micros", "f_daily_perf"):
        assert physical not in ddl


def test_scales_divide_by_integers_and_multiply_otherwise():
    assert scaled_column_sql("c", 1e-6) == 'CAST("c" AS DOUBLE) / 1000000'
    assert scaled_column_sql("c", 0.01) == 'CAST("c" AS DOUBLE) / 100'
    assert scaled_column_sql("c", 2.5) == 'CAST("c" AS DOUBLE) * 2.5'
    assert scaled_column_sql("c", None) == '"c"'


def test_a_view_that_collides_with_a_table_is_refused(ads_schema):
    first = ads_schema.entities[0].model_copy(update={"table": "agency"})
    clashing = ads_schema.model_copy(update={"entities": (first, *ads_schema.entities[1:])})
    with pytest.raises(ValueError, match="same name as a physical table"):
        binding_sql(clashing)
