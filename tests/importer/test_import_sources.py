"""`craftc import` reads DDL in several dialects, dbt YAML and DuckDB files.

What is declared in the source is taken as is; what is guessed from conventions is
marked `# guessed:` in the spec, so the tests check both the spec text and the marks.
"""

from pathlib import Path

import duckdb
import pytest

from craftc.importer import ImportFailed, import_schema

FIXTURES = Path(__file__).parent / "fixtures"


def test_postgres_ddl_keeps_declared_keys_refs_and_comments():
    spec = import_schema(FIXTURES / "shop_postgres.sql", dialect="postgres")
    assert 'table "public.orders"' in spec
    assert 'ref   customer -> Customer -> column "customer_id"' in spec
    assert 'doc   "One checkout by one customer"' in spec
    # a declared reference is not a guess; the money scale from `_cents` is
    assert "guessed: ref" not in spec
    assert "# guessed: money in units of 0.01 from the `_cents` suffix" in spec
    assert 'field total money "Order total including tax" -> column "total_cents" scale 0.01' in spec


def test_bigquery_ddl_without_keys_marks_every_guess():
    spec = import_schema(FIXTURES / "shop_bigquery.sql", dialect="bigquery")
    assert "# guessed: key `line_id`: named after the table (no primary key declared, no data to check)" in spec
    assert "# guessed: ref: `sku` has the name of Product's key; no data to check" in spec
    assert 'ref   sku -> Product -> column "sku"' in spec


def test_snowflake_upper_case_columns_become_snake_case_fields_bound_to_the_exact_name():
    spec = import_schema(FIXTURES / "shop_snowflake.sql", dialect="snowflake")
    assert 'field store_name string -> column "STORE_NAME" nullable' in spec
    assert 'ref   store -> Store -> column "STORE_ID"' in spec
    assert 'doc   "Physical and online stores"' in spec


def test_dbt_yaml_uses_descriptions_tests_and_relationships():
    spec = import_schema(FIXTURES / "shop_dbt.yml")
    assert 'table "raw_shop.payments"' in spec
    assert 'ref   order -> Order -> column "order_id"' in spec
    # accepted_values is a declaration, not a guess
    assert 'field method enum(card, wallet, voucher) "How the customer paid" nullable' in spec
    assert "enum from 3 distinct values" not in spec


def test_duckdb_import_guesses_enums_from_data_and_keys_from_unique_ids(tmp_path):
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE SCHEMA crm")
    con.execute("CREATE TABLE crm.cust_dim (cust_id INTEGER, tier VARCHAR, spend_micros BIGINT)")
    con.execute("INSERT INTO crm.cust_dim SELECT i, ['gold','silver','bronze'][i % 3 + 1], i * 1000000 "
                "FROM range(1, 31) t(i)")
    con.execute("CREATE VIEW customer AS SELECT * FROM crm.cust_dim")  # views are bindings: skipped
    con.close()
    spec = import_schema(db, name="crm")
    assert "schema crm version 1 {" in spec
    assert "entity Cust {" in spec and "entity Customer" not in spec
    assert "field tier enum(bronze, gold, silver)" in spec
    assert "# guessed: enum: 3 distinct values in 30 rows" in spec
    assert 'field spend money -> column "spend_micros" scale 1e-06' in spec
    assert "# guessed: key `cust_id`: named after the table, unique and never null in all 30 rows" in spec


def test_the_same_source_always_gives_the_same_bytes():
    a = import_schema(FIXTURES / "shop_postgres.sql", dialect="postgres")
    b = import_schema(FIXTURES / "shop_postgres.sql", dialect="postgres")
    assert a == b


@pytest.mark.parametrize("text, suffix, code, line", [
    ("CREATE TABLE t (\n a INT,\n b INT\n", ".sql", "E906", 3),
    ("CREATE TABLE ok (a INT);\nCREATE TABLE empty ();\n", ".sql", "E908", 2),
    ("GRANT SELECT ON t TO bob;", ".sql", "E907", 1),
    ("sources: [\n  {name: x, tables: [\n", ".yml", "E906", 3),
    ("just: text\n", ".yml", "E904", 1),
    ("hello", ".csv", "E902", 1),
])
def test_bad_sources_give_a_located_diagnostic_not_a_traceback(tmp_path, text, suffix, code, line):
    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    with pytest.raises(ImportFailed) as info:
        import_schema(path, dialect="postgres" if suffix == ".sql" else None)
    diag = info.value.diagnostics[0]
    assert diag.code == code
    assert diag.span.line == line and diag.help


def test_a_missing_or_unreadable_file_is_named(tmp_path):
    with pytest.raises(ImportFailed, match="does not exist"):
        import_schema(tmp_path / "nope.sql")
    binary = tmp_path / "bin.sql"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ImportFailed, match="cannot read"):
        import_schema(binary)


def test_an_unsupported_dialect_lists_the_supported_ones(tmp_path):
    path = tmp_path / "a.sql"
    path.write_text("CREATE TABLE t (a INT);")
    with pytest.raises(ImportFailed) as info:
        import_schema(path, dialect="cobol")
    assert "postgres" in info.value.diagnostics[0].help
