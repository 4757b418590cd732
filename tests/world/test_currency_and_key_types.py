"""The prompt's DDL says what the spec says: the currency it declares (or none), and keys
and refs typed as the warehouse types its ids; the generated world and the profile follow."""

from __future__ import annotations

import duckdb
import pytest

from craftc.emit.binding_sql import binding_sql, logical_ddl
from craftc.frontend import load_schema
from runtime.world.generate import generate_warehouse
from runtime.world.profile import data_profile

PAYMENTS = """
schema payments version 1 {
  doc "Card payments of an online shop"
  entity Customer {
    table "pay.customers"
    key   id string -> column "customer_id"
    field email string
    field joined_on date
  }
  entity Charge {
    table "pay.charges"
    key   id string -> column "charge_id"
    ref   customer -> Customer -> column "customer_id"
    field amount money "Charged amount" -> column "amount" scale 0.01
    field fee money "Processing fee" -> column "fee_cents" scale 0.01 currency "EUR"
    field created_at timestamp
  }
  entity Note {
    table "pay.notes"
    key   id -> column "note_id"
    ref   charge -> Charge -> column "charge_id" nullable
  }
}
"""


def _schema(tmp_path, text: str = PAYMENTS):
    path = tmp_path / "payments.craft"
    path.write_text(text)
    load = load_schema(path)
    assert load.schema is not None and load.ok, load.render()
    return load


def test_without_a_currency_the_prompt_names_none(tmp_path):
    ddl = logical_ddl(_schema(tmp_path).schema)
    assert "USD" not in ddl and "Money is in" not in ddl
    assert "-- Query these tables by name with api.query(sql)." in ddl
    # a field in another currency says so in its comment
    assert "fee DOUBLE NOT NULL,  -- Processing fee (in EUR)" in ddl


def test_the_schema_currency_is_the_one_the_prompt_names(tmp_path):
    text = PAYMENTS.replace('  doc "Card payments of an online shop"\n',
                            '  doc "Card payments of an online shop"\n  currency "GBP"\n')
    load = _schema(tmp_path, text)
    assert load.schema.currency == "GBP"
    assert "-- Money is in GBP. Query these tables" in logical_ddl(load.schema)


def test_string_keys_and_the_refs_to_them_are_varchar(tmp_path):
    ddl = logical_ddl(_schema(tmp_path).schema)
    assert "CREATE TABLE customer (\n  id VARCHAR PRIMARY KEY," in ddl
    assert "customer_id VARCHAR NOT NULL REFERENCES customer(id)" in ddl
    assert "CREATE TABLE note (\n  id BIGINT PRIMARY KEY," in ddl          # an int key stays BIGINT
    assert "charge_id VARCHAR REFERENCES charge(id)" in ddl               # a ref types as its target's key


def test_a_generated_world_stores_string_keys_as_text_and_profiles_generically(tmp_path):
    schema = _schema(tmp_path).schema
    db = tmp_path / "w.duckdb"
    generate_warehouse(schema, db, seed=3, scale=0.2, binding_sql=binding_sql(schema))
    con = duckdb.connect(str(db), read_only=True)
    try:
        types = dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() "
                                 "WHERE schema_name = 'pay' AND table_name = 'charges'").fetchall())
        orphans = con.execute("SELECT count(*) FROM charge c LEFT JOIN customer u ON u.id = c.customer_id "
                              "WHERE u.id IS NULL").fetchone()[0]
    finally:
        con.close()
    assert types["charge_id"] == "VARCHAR" and types["customer_id"] == "VARCHAR"
    assert orphans == 0
    profile = data_profile(db)
    assert set(profile) == {"row_counts", "null_shares", "value_ranges", "time_spans"}   # no ads section
    assert profile["row_counts"]["charge"] > 0
    amount = profile["value_ranges"]["charge.amount"]
    assert 0 < amount["min"] <= amount["mean"] <= amount["max"]
    span = profile["time_spans"]["customer.joined_on"]
    assert span["first"] <= span["last"] and span["days"] >= 0
    assert "charge.created_at" in profile["time_spans"]


@pytest.mark.parametrize("edit, code, message", [
    (('field email string', 'field email string currency "EUR"'), "E217",
     "field `Customer.email` is `string`, and only money has a currency"),
    (('  doc "Card payments of an online shop"\n', '  doc "Card payments"\n  currency "USD"\n  currency "EUR"\n'),
     "E217", "schema `payments` declares `currency` more than once"),
    (('key   id string -> column "customer_id"', 'key   id float -> column "customer_id"'), "E205",
     "entity `Customer`: a key is `int` or `string`, not `float`"),
])
def test_a_misplaced_currency_or_key_type_is_a_located_error(tmp_path, edit, code, message):
    path = tmp_path / "bad.craft"
    path.write_text(PAYMENTS.replace(*edit))
    load = load_schema(path)
    found = [d for d in load.diagnostics if d.code == code]
    assert found and found[0].message == message, load.render()
    line = next(n for n, row in enumerate(path.read_text().splitlines(), 1) if edit[1].splitlines()[-1] in row)
    assert found[0].span.line == line
