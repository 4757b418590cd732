"""The names an import writes: the clashes a real package produced, resolved the same way every time."""

import duckdb

from craftc.frontend import load_schema
from craftc.importer import import_tables
from craftc.importer.sources import read_duckdb_connection


def _import(tmp_path, *statements: str) -> str:
    con = duckdb.connect()
    for sql in statements:
        con.execute(sql)
    text = import_tables(read_duckdb_connection(con, "w.duckdb"), "w", "w.duckdb")
    spec = tmp_path / "w.craft"
    spec.write_text(text)
    load = load_schema(spec)
    assert load.ok and {d.code for d in load.diagnostics} <= {"W115"}, load.render() + text
    return text


def test_a_real_id_column_keeps_its_name_and_the_key_keeps_its_column_name(tmp_path):
    text = _import(tmp_path, "CREATE TABLE raw_label (label_id INT PRIMARY KEY, id INT, name VARCHAR)")
    assert 'key   label_id -> column "label_id"' in text
    assert "field id int nullable" in text


def test_a_ref_does_not_take_the_name_of_a_column(tmp_path):
    text = _import(tmp_path,
                   "CREATE SCHEMA ads",
                   "CREATE TABLE ads.campaigns (id INT PRIMARY KEY, name VARCHAR)",
                   "CREATE TABLE ads.ads (id INT PRIMARY KEY, campaign_id INT, campaign VARCHAR, campaign_2 INT)",
                   "INSERT INTO ads.campaigns VALUES (1, 'a'), (2, 'b')",
                   "INSERT INTO ads.ads VALUES (10, 1, 'a', 0), (11, 2, 'b', 0)")
    assert "field campaign string nullable" in text
    assert 'ref   campaign_ref -> Campaign -> column "campaign_id" nullable' in text


def test_keywords_and_odd_names_become_identifiers(tmp_path):
    text = _import(tmp_path, 'CREATE TABLE "table" ("key" INT, "2nd value" VARCHAR, "Ümsatz" DOUBLE, "ref" INT)')
    assert "entity TableEntity {" in text and 'table "table"' in text   # view `table` would be the table
    assert 'field c_2nd_value string -> column "2nd value" nullable' in text
    assert 'field umsatz float -> column "Ümsatz" nullable' in text
    assert 'field ref_ int -> column "ref" nullable' in text


def test_an_entity_never_gets_the_view_name_of_a_table(tmp_path):
    text = _import(tmp_path, "CREATE TABLE customer (id INT)", "CREATE TABLE customers (id INT)")
    assert "entity CustomerEntity {" in text and 'table "customer"' in text
    assert "entity Customer {" not in text or 'table "customers"' in text


def test_refs_that_would_close_a_cycle_are_nullable(tmp_path):
    text = _import(tmp_path,
                   "CREATE SCHEMA s",
                   "CREATE TABLE s.a (id INT PRIMARY KEY, b_id INT NOT NULL)",
                   "CREATE TABLE s.b (id INT PRIMARY KEY, a_id INT NOT NULL)",
                   "INSERT INTO s.a VALUES (1, 1)", "INSERT INTO s.b VALUES (1, 1)")
    assert 'ref   b -> B -> column "b_id"\n' in text
    assert "# guessed: nullable: a required `a` would close a cycle of refs back to B" in text
