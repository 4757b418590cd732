"""A connector-shaped warehouse (tests/importer/pinwheel_fixture.py): prefixed table names,
SCD2 history tables versioned by a modification time, daily report tables with no id,
and a dbt project whose manifest and catalog name one relation as both seed and source.
One test per problem a new user met importing such a warehouse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from craftc.fmt import format_source
from craftc.frontend import load_recipe, load_schema
from craftc.importer import ImportFailed, import_schema
from craftc.importer.infer import infer_entities
from craftc.importer.merge import merge_dbt_docs
from craftc.importer.sources import read_source
from pinwheel_fixture import build_dbt_project, build_warehouse

HERE = Path(__file__).parent
GOLDEN = HERE / "fixtures" / "pinwheel.expected.craft"
ROOT = HERE.parent.parent


@pytest.fixture(scope="module")
def pinwheel(tmp_path_factory):
    root = tmp_path_factory.mktemp("pinwheel")
    warehouse = build_warehouse(root / "warehouse.duckdb")
    return warehouse, build_dbt_project(root / "pinwheel_dbt", warehouse)


def _passes_check(text: str, tmp_path: Path, name: str = "imported.craft") -> None:
    spec = tmp_path / name
    spec.write_text(text)
    load = load_schema(spec)
    assert load.ok and {d.code for d in load.diagnostics} <= {"W115"}, load.render()
    assert format_source(text, name) == text          # `craftc fmt --check` passes on it


def test_the_import_passes_check_and_fmt_and_equals_the_reviewed_golden(pinwheel, tmp_path):
    warehouse, dbt = pinwheel
    text = import_schema(warehouse, name="pinwheel", docs_from=dbt)
    if os.environ.get("CRAFT_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    _passes_check(text, tmp_path)


def _entities(pinwheel):
    warehouse, dbt = pinwheel
    tables = read_source(warehouse)
    merge_dbt_docs(tables, read_source(dbt / "target/manifest.json"), "pinwheel_dbt")
    return {e.name: e for e in infer_entities(tables)}


def test_history_tables_are_recognised_by_their_modification_time_and_checked_by_uniqueness(pinwheel):
    entities = _entities(pinwheel)
    for name, version in (("Advertiser", "modified_time"), ("Campaign", "last_modified_time"),
                          ("AdGroup", "modified_time")):
        e = entities[name]
        assert e.key.column == "id" and e.history_version == version, name
        assert e.key_guess.startswith("history table:"), e.key_guess
        assert f"(`id`, `{version}`) is unique in all" in e.key_guess, e.key_guess


def test_daily_report_tables_are_told_apart_by_their_grain_and_nothing_refs_them(pinwheel):
    entities = _entities(pinwheel)
    report = entities["CampaignReportDaily"]
    assert "fact table: one row per (date, campaign_id), unique and never null in all 228 rows" in report.key_guess
    assert report.key is None and report.grain == ["date", "campaign"]
    assert "one row per (date, ad_group_id)" in entities["AdGroupReportDaily"].key_guess
    assert entities["AdGroupReportDaily"].grain == ["date", "ad_group"]
    targets = {r.target for e in entities.values() for r in e.refs}
    assert not targets & {"CampaignReportDaily", "AdGroupReportDaily"}


def test_refs_look_through_the_platform_prefix_and_are_checked_by_containment(pinwheel):
    entities = _entities(pinwheel)
    refs = {(e.name, r.column): r.target for e in entities.values() for r in e.refs}
    assert refs == {
        ("AdGroup", "campaign_id"): "Campaign",
        ("AdGroupReportDaily", "ad_group_id"): "AdGroup",
        ("AdGroupReportDaily", "campaign_id"): "Campaign",
        ("Campaign", "advertiser_id"): "Advertiser",     # the dbt relationships test
        ("CampaignReportDaily", "campaign_id"): "Campaign",
    }
    comment = next(r.comments[0] for r in entities["AdGroup"].refs)
    assert "all 6 distinct values are Campaign keys" in comment


def test_a_ref_that_is_mostly_contained_is_kept_with_its_ratio_and_one_that_is_not_is_refused(tmp_path):
    import duckdb

    from craftc.importer import import_tables
    from craftc.importer.sources import read_duckdb_connection

    con = duckdb.connect()
    con.execute("CREATE TABLE pw_campaign (id INT, name VARCHAR)")
    con.execute("INSERT INTO pw_campaign SELECT i, 'c' || i FROM range(1, 41) t(i)")
    con.execute("CREATE TABLE pw_ad (id INT, campaign_id INT, promo_id DOUBLE, owner_id INT)")
    # 39 of 40 campaigns exist (one deleted); promo ids are floats; owner ids are all null
    con.execute("INSERT INTO pw_ad SELECT i, CASE WHEN i = 40 THEN 99 ELSE i END, 1.5, NULL FROM range(1, 41) t(i)")
    con.execute("CREATE TABLE pw_promo (id INT)")
    con.execute("CREATE TABLE pw_owner (id INT)")
    con.execute("INSERT INTO pw_owner VALUES (1), (2)")
    text = import_tables(read_duckdb_connection(con, "memory"), "t", "memory")
    assert "39 of its 40 distinct values (98%) are Campaign keys; 1 are not" in text
    assert "ref   campaign -> Campaign" in text
    assert "not a ref: `promo_id` names Promo but is DOUBLE, not a type that holds ids" in text
    assert "not a ref: `owner_id` names Owner but is null in all 40 rows" in text
    _passes_check(text, tmp_path)


def test_a_seed_and_a_source_of_one_relation_are_one_entity_from_the_manifest_and_the_catalog(pinwheel, tmp_path):
    _, dbt = pinwheel
    for artifact in ("manifest.json", "catalog.json"):
        text = import_schema(dbt / "target" / artifact)
        assert text.count('table "pinwheel.pw_country_codes"') == 1
        assert "described twice (as a dbt seed and as a dbt source); merged into one entity" in text or \
            "described twice (as a catalog entry and as a catalog entry); merged" in text
        _passes_check(text, tmp_path, artifact + ".craft")


def test_docs_from_reports_what_it_matched_and_fails_when_nothing_matched(pinwheel, tmp_path):
    warehouse, dbt = pinwheel
    report: list[str] = []
    import_schema(warehouse, docs_from=dbt, report=report)
    assert report == ["docs from pinwheel_dbt: 6 of 6 dbt tables matched a warehouse table"]
    other = tmp_path / "other"
    (other / "models").mkdir(parents=True)
    (other / "dbt_project.yml").write_text("name: other\nversion: '1'\nconfig-version: 2\n")
    (other / "models/s.yml").write_text("version: 2\nmodels:\n  - name: orders\n    columns:\n      - name: id\n")
    with pytest.raises(ImportFailed) as info:
        import_schema(warehouse, docs_from=other)
    assert info.value.diagnostics[0].code == "E911"
    out = subprocess.run([sys.executable, "-m", "craftc.cli", "import", str(warehouse), "--docs-from", str(other),
                          "-o", str(tmp_path / "x.craft")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 1 and "E911" in out.stderr and not (tmp_path / "x.craft").exists()


def test_the_import_placeholder_doc_is_a_warning(pinwheel, tmp_path):
    warehouse, _ = pinwheel
    spec = tmp_path / "p.craft"
    spec.write_text(import_schema(warehouse))
    assert [d.code for d in load_schema(spec).diagnostics] == ["W115"]


def test_money_and_enums_come_from_column_docs_and_an_enum_is_closed_only_with_evidence(pinwheel):
    warehouse, dbt = pinwheel
    text = import_schema(warehouse, docs_from=dbt)
    assert 'field budget money "Daily budget in micros of the advertiser currency." -> column "budget_micros" ' \
           'scale 1e-06' in text
    assert "field status enum(ACTIVE, PAUSED, DELETED)" in text       # the doc lists DELETED
    assert "field status string nullable" in text                      # 9 rows of advertisers: no evidence


def test_an_enum_sample_with_values_seen_once_stays_open(tmp_path):
    import duckdb

    from craftc.importer import import_tables
    from craftc.importer.sources import read_duckdb_connection

    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INT, kind VARCHAR)")
    kinds = ["SEARCH"] * 12 + ["DISPLAY"] * 10 + ["VIDEO", "AUDIO"]     # 2 of 24 rows seen once
    con.executemany("INSERT INTO t VALUES (?, ?)", [[i, k] for i, k in enumerate(kinds)])
    text = import_tables(read_duckdb_connection(con, "memory"), "t", "memory")
    assert "field kind string" in text and "`AUDIO`, `VIDEO` occur once in 24 rows" in text


def test_a_ref_whose_view_column_clashes_with_the_key_is_an_error(tmp_path):
    spec = tmp_path / "s.craft"
    spec.write_text('schema s version 1 {\n  entity Campaign {\n    key id\n  }\n  entity Report {\n'
                    '    key   campaign_id\n    ref   campaign -> Campaign\n  }\n}\n')
    load = load_schema(spec)
    assert not load.ok and any(d.code == "E101" and "campaign_id" in d.message for d in load.diagnostics), \
        load.render()
