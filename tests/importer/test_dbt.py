"""dbt as dbt users have it: a project with Jinja in its YAML, seeds loaded into a
warehouse, and the artifacts `dbt docs generate` writes.

The fixture project (fixtures/dbt_ads) is shaped like a real connector package:
history tables where every id repeats once per synced version, a stats table with no
key at all, no declared primary keys, `_micros` money, docs in `{% docs %}` blocks and
schema names from `var()`.
"""

import os
from pathlib import Path

import duckdb
import pytest

from craftc.frontend import load_schema
from craftc.importer import ImportFailed, import_schema
from craftc.importer.infer import infer_entities
from craftc.importer.merge import merge_dbt_docs
from craftc.importer.sources import read_source, read_source_with_notes

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT = FIXTURES / "dbt_ads"
GOLDEN = FIXTURES / "dbt_ads.expected.craft"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    """The project's seed CSVs loaded into DuckDB the way `dbt seed` would, in the source schema."""
    path = tmp_path_factory.mktemp("dbt") / "ads.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA google_ads")
    for csv in sorted((PROJECT / "seeds").glob("*.csv")):
        con.execute(f"CREATE TABLE google_ads.{csv.stem} AS SELECT * FROM read_csv(?)", [str(csv)])
    con.close()
    return path


def _checks(text: str, tmp_path: Path, name: str = "imported.craft") -> None:
    spec = tmp_path / name
    spec.write_text(text)
    load = load_schema(spec)
    assert load.ok and {d.code for d in load.diagnostics} <= {"W115"}, load.render()


def test_warehouse_with_dbt_docs_matches_the_reviewed_golden_spec(warehouse, tmp_path):
    text = import_schema(warehouse, name="ads", docs_from=PROJECT)
    if os.environ.get("CRAFT_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    _checks(text, tmp_path)


def test_keys_and_refs_follow_the_evidence(warehouse):
    tables, _ = read_source_with_notes(warehouse)
    docs, _ = read_source_with_notes(PROJECT)
    merge_dbt_docs(tables, docs, "dbt_ads")
    got = {e.name: (e.key.column if e.key else e.grain, e.history_version,
                    sorted((r.column, r.target) for r in e.refs)) for e in infer_entities(tables)}
    assert got == {
        # history tables: keyed on their own repeating `id`, never on a parent's id, named after
        # what they version; the view holds each id's latest version by `updated_at`
        "Account": ("id", "updated_at", []),
        "Campaign": ("id", "updated_at", [("customer_id", "Account")]),     # dbt relationships test
        "AdGroup": ("id", "updated_at", [("campaign_id", "Campaign")]),     # `<entity>_id` + containment
        "Ad": ("id", "updated_at", [("ad_group_id", "AdGroup")]),
        # no unique column: the grain (date, ad) identifies a row, and nothing refs the stats table
        "AdStat": (["date", "ad"], "", [("ad_group_id", "AdGroup"), ("ad_id", "Ad"), ("campaign_id", "Campaign")]),
        # declared by dbt tests unique + not_null, next to a real `id` column
        "Label": ("label_id", "", []),
    }


def test_guesses_say_why(warehouse):
    text = import_schema(warehouse, name="ads", docs_from=PROJECT)
    assert ("# guessed: history table: key `id` repeats (40 rows, 4 distinct values) and "
            "(`id`, `updated_at`) is unique in all 40 rows; one row per version") in text
    assert "# guessed: fact table: one row per (date, ad_id), unique and never null in all 64 rows" in text
    assert "all 6 distinct values are AdGroup keys" in text
    # twelve rows of one value are no evidence of an enum; 40 rows of two values are
    assert "enum(PAUSED)" not in text and "field status enum(ENABLED, PAUSED, REMOVED) \"Serving status.\"" in text
    # 40 rows of two values close the list, and ad_history.status (same values, and REMOVED) joins it
    assert "`google_ads.ad_history.status` adds REMOVED" in text
    assert "key   label_id -> column \"label_id\"" in text and 'field id int "The label' in text


def test_a_project_imports_from_dbt_project_yml_with_its_jinja_rendered(tmp_path):
    text = import_schema(PROJECT / "dbt_project.yml")
    assert "{{" not in text and "Var" not in text
    assert 'table "google_ads.campaign_history"' in text           # var() from dbt_project.yml vars
    assert 'table "google_ads.ad_group_history"' in text           # var() default in the YAML
    assert '"Spend in micros of the account currency (USD)."' in text   # doc() block using var()
    assert 'field cost money "Spend in micros of the account currency (USD)." -> column "cost_micros" scale 1e-06' in text
    assert "# note: skipped `stg_ads__notes`" in text
    assert "schema dbt_ads version 1 {" in text
    # the seed CSVs back the source tables: real types, and the data as evidence
    assert "# note: types and data from 6 seed CSVs" in text
    assert "field clicks int nullable" in text
    assert "history table: key `id` repeats (40 rows, 4 distinct values)" in text
    warehouse_spec = GOLDEN.read_text()
    for entity in ("AdStat", "Ad", "Campaign", "Label"):
        block = lambda spec: spec[spec.index(f"entity {entity} {{"):].split("\n  }")[0]
        assert block(text) == block(warehouse_spec), entity
    assert import_schema(PROJECT) == text
    _checks(text, tmp_path)


def test_a_seed_no_yaml_describes_is_imported_as_it_is(tmp_path):
    (tmp_path / "dbt_project.yml").write_text("name: p\nversion: '1'\nconfig-version: 2\n")
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds/country_codes.csv").write_text("code,name\nDE,Germany\nFR,France\n")
    text = import_schema(tmp_path)
    assert 'table "country_codes"' in text and "entity CountryCode {" in text
    assert "# note: types and data from 1 seed CSVs (1 not described in YAML, imported as they are)" in text
    _checks(text, tmp_path, "seeds.craft")


def test_catalog_json_gives_types_and_its_manifest_gives_docs_and_tests(tmp_path):
    text = import_schema(PROJECT / "target/catalog.json")
    assert "# note: docs and tests from manifest.json" in text
    assert "field clicks int nullable" in text and "field date date nullable" in text
    assert 'ref   customer -> AccountHistory "The account that owns the campaign." -> column "customer_id"' in text
    assert "key   label_id" in text
    _checks(text, tmp_path)
    _checks(import_schema(PROJECT / "target/manifest.json"), tmp_path, "from_manifest.craft")


@pytest.mark.parametrize("files, code, line, col", [
    ({"models/a.yml": "version: 2\nmodels:\n  - name: m\n    description: \"{{ var('nope') }}\"\n"
                      "    columns: [{name: id}]\n"}, "E909", 4, 18),
    ({"models/a.yml": "version: 2\nmodels:\n  - name: m\n    description: \"{{ doc('nope') }}\"\n"
                      "    columns: [{name: id}]\n"}, "E909", 4, 18),
    ({"models/a.yml": "version: 2\nmodels:\n  my_project:\n    +materialized: view\n"}, "E910", 3, 3),
    ({"models/a.yml": "version: 2\nmodels:\n  - name: m\n    description: \"{{ oops(\"\n"}, "E909", 4, 18),
    ({"models/a.yml": "version: 2\nmodels:\n  - name: m\n    description: [oops\n"}, "E906", 5, 1),
])
def test_a_project_it_cannot_read_gives_a_located_diagnostic(tmp_path, files, code, line, col):
    (tmp_path / "dbt_project.yml").write_text("name: p\nversion: '1'\nconfig-version: 2\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(ImportFailed) as info:
        import_schema(tmp_path / "dbt_project.yml")
    diag = info.value.diagnostics[0]
    assert (diag.code, diag.span.line, diag.span.col) == (code, line, col), diag
    assert diag.span.file.endswith("models/a.yml") and diag.help


def test_a_one_line_json_file_is_shown_as_a_short_excerpt(tmp_path):
    from craftc.diagnostics import render_diagnostics

    big = tmp_path / "catalog.json"
    big.write_text('{"metadata": {}, "nodes": {"x": "' + "y" * 70_000 + '"}}')
    with pytest.raises(ImportFailed) as info:
        import_schema(big)
    text = render_diagnostics(info.value.diagnostics)
    assert info.value.diagnostics[0].code == "E902"
    assert max(len(line) for line in text.splitlines()) < 200
    broken = tmp_path / "manifest.json"
    broken.write_text((PROJECT / "target/catalog.json").read_text()[:3000])
    with pytest.raises(ImportFailed) as info:
        import_schema(broken)
    diag = info.value.diagnostics[0]
    assert (diag.code, diag.span.line) == ("E906", 1) and diag.span.col > 2900
    assert max(len(line) for line in render_diagnostics([diag]).splitlines()) < 200


def test_the_cli_imports_a_warehouse_with_docs_from_a_project(warehouse, tmp_path):
    from craftc.cli import main

    out = tmp_path / "ads.craft"
    assert main(["import", str(warehouse), "--docs-from", str(PROJECT), "--name", "ads", "-o", str(out)]) == 0
    assert out.read_text() == GOLDEN.read_text()
    assert main(["check", str(out)]) == 0
