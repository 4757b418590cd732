"""`craftc check --preflight` measures the schema on the data: each ref's containment, each
enum's values, each key's uniqueness, reported at the spec's line.

The warehouse is built here: customers with text ids, orders whose customer is a dangling
key for 1 row in 20, a card column with no value, a status the enum does not list, notes
whose key repeats and whose order column holds no order id at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[2]

SPEC = """schema shop version 1 {
  doc "Orders of a small shop"
  entity Customer {
    doc   "A buyer"
    table "raw.customers"
    key   id string -> column "customer_id"
    field tier enum(gold, silver) "Loyalty tier"
  }
  entity Order {
    doc   "One order"
    table "raw.orders"
    key   id string -> column "order_id"
    ref   customer -> Customer "Who ordered" -> column "customer_id"
    ref   card -> Customer "Who paid" -> column "card_id" nullable
    field status enum(shipped) "Where the order is"
  }
  entity Note {
    doc   "A support note"
    table "raw.notes"
    key   id -> column "note_id"
    ref   order -> Order "The order the note is about" -> column "order_ref"
  }
}
"""

RECIPE = """recipe shop {
  uses schema "shop.craft"
  seed 1
  warehouse "shop.duckdb"

  workflow count_orders {
    ask   "How many orders are there?"
    ask   "Count the orders"
    uses  Order
    solution "count_orders.py"
    expect same_rows
  }

  teacher synthetic { candidates 1  instances 4 }
  model tiny_moe { source tiny_moe  hidden 64  layers 2  experts 2  top_k 1  vocab 512  context 1536 }
  stage sft  { base tiny_moe  epochs 1  batch 8  per_device_batch 8  max_length 512 }
  stage grpo { from sft  steps 2  group 2  max_new_tokens 64  batch 4  per_device_batch 4 }
  eval { holdout 25%  instances 2 }
}
"""


def _warehouse(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA raw")
    con.execute("CREATE TABLE raw.customers AS SELECT 'cus_' || i AS customer_id, "
                "['gold', 'silver'][1 + i % 2] AS tier FROM range(20) t(i)")
    con.execute("CREATE TABLE raw.orders AS SELECT 'ord_' || i AS order_id, "
                "CASE WHEN i % 20 = 0 THEN 'cus_gone' ELSE 'cus_' || (i % 20) END AS customer_id, "
                "CAST(NULL AS VARCHAR) AS card_id, CASE WHEN i % 4 = 0 THEN 'returned' ELSE 'shipped' END AS status "
                "FROM range(100) t(i)")
    con.execute("CREATE TABLE raw.notes AS SELECT i % 8 AS note_id, 'ticket_' || i AS order_ref FROM range(10) t(i)")
    con.close()
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("preflight_data")
    _warehouse(root / "shop.duckdb")
    (root / "shop.craft").write_text(SPEC)
    (root / "recipe.craft").write_text(RECIPE)
    (root / "count_orders.py").write_text('"""Count every order."""\n'
                                          'result = api.query("SELECT count(*) AS orders FROM \\"order\\"")\n')
    return root


def _line(text: str, needle: str) -> int:
    return next(n for n, row in enumerate(text.splitlines(), 1) if needle in row)


def test_each_claim_the_data_refutes_is_reported_at_its_spec_line(project):
    done = subprocess.run([sys.executable, "-m", "craftc.cli", "check", "--preflight", "recipe.craft"], cwd=project,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)
    err = done.stderr
    assert done.returncode == 1, err           # E320 is an error
    assert "Traceback" not in err

    def at(code: str, message: str, needle: str) -> None:
        head = f"{code}]: {message}"
        assert head in err, err
        block = err[err.index(head):]
        assert f"--> shop.craft:{_line(SPEC, needle)}:" in block.split("\n\n")[0], block[:400]

    at("E320", "ref `Note.order` -> Order: 0 of 10 rows with a value (0.0%) are Order keys",
       'ref   order -> Order')
    at("W321", "ref `Order.card` -> Customer: its column `card_id` is null in all 100 rows", 'ref   card -> Customer')
    at("W322", "enum `Order.status`: 25 of its 100 values are not listed: `returned` (25)", "field status enum(shipped)")
    at("W323", "key `Note.id` is not unique in its 10 rows: 2 repeated values", 'key   id -> column "note_id"')
    # every claim is reported, the ones the data bears out too, with their shares
    assert "ok    ref `Order.customer` -> Customer: 95 of 100 rows with a value (95.0%) are Customer keys" in err
    assert "ok    key `Customer.id`: unique in all 20 rows" in err
    assert "ok    enum `Customer.tier`: every one of 20 values is listed" in err
    # a share above 90% is no warning: a few dangling keys are normal
    assert "W321]: ref `Order.customer`" not in err


def test_the_findings_come_from_the_views_of_any_warehouse(project, tmp_path):
    from craftc.emit.binding_sql import binding_sql
    from craftc.frontend import load_schema
    from craftc.preflight import data_diagnostics
    from runtime.world.binding import apply_binding

    schema = load_schema(project / "shop.craft").schema
    warehouse = tmp_path / "bound.duckdb"
    warehouse.write_bytes((project / "shop.duckdb").read_bytes())
    con = duckdb.connect(str(warehouse))
    apply_binding(con, schema, binding_sql(schema))
    con.close()
    report: list[str] = []
    found = data_diagnostics(schema, warehouse, report)
    assert sorted(d.code for d in found) == ["E320", "W321", "W322", "W323"]
    assert len(report) == 3 + 3 + 2          # 3 keys, 3 refs, 2 enums
    # fixed data: nothing to report but the measures
    con = duckdb.connect(str(warehouse))
    con.execute("UPDATE raw.orders SET status = 'shipped', card_id = customer_id")
    con.execute("UPDATE raw.notes SET order_ref = 'ord_' || note_id")
    con.execute("DELETE FROM raw.notes WHERE rowid >= 8")
    con.close()
    assert data_diagnostics(schema, warehouse) == []


def test_the_world_step_says_what_the_rows_refute(project, tmp_path):
    import json

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plan, run = tmp_path / "plan", tmp_path / "run"
    for args in (["compile", "recipe.craft", "-o", plan], ["run", plan, "--only", "world", "--run-dir", run]):
        done = subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "world: E320 ref `Note.order` -> Order: 0 of 10 rows" in done.stdout + done.stderr
    metrics = json.loads((run / "world" / "manifest.json").read_text())["metrics"]
    assert metrics["data_checks"] == {"E320": 1, "W321": 1, "W322": 1, "W323": 1}
