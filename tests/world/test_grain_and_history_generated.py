"""A generated warehouse honours `grain` and `history by`: the grain is unique, a history
entity's view holds one row per key (its latest version) and `<view>_history` every version."""

from __future__ import annotations

from craftc.emit.binding_sql import binding_sql
from craftc.frontend import load_schema
from runtime.world.api import connect
from runtime.world.binding import logical_data_hash
from runtime.world.generate import generate_warehouse

SPEC = '''schema s version 1 {
  doc "A shop's products, their price history and daily sales"
  entity Product {
    doc   "Something the shop sells, one row per price change"
    table "raw.product_history"
    key   id -> column "product_id"
    history by changed_at
    field name string
    field price money -> column "price_cents" scale 0.01
    field changed_at timestamp
  }
  entity DailySale {
    doc   "Units sold of each product on each day"
    table "raw.daily_sales"
    grain day, product
    ref   product -> Product
    field day date
    field units int
  }
}
'''


def test_generated_grain_and_history_hold(tmp_path):
    spec = tmp_path / "s.craft"
    spec.write_text(SPEC)
    schema = load_schema(spec).schema
    counts = generate_warehouse(schema, tmp_path / "w.duckdb", seed=3, scale=1.0, binding_sql=binding_sql(schema))
    api = connect(tmp_path / "w.duckdb")
    now, every, ids = api.query("SELECT (SELECT count(*) FROM product), (SELECT count(*) FROM product_history), "
                                "(SELECT count(DISTINCT id) FROM product_history)").iloc[0].tolist()
    assert now == ids and every > now and counts["Product"] == every
    rows, distinct = api.query("SELECT count(*), count(DISTINCT (day, product_id)) FROM daily_sale").iloc[0].tolist()
    assert rows == distinct > 0
    assert list(api.describe("daily_sale")["field"]) == ["product_id", "day", "units"]
    assert "ProductHistory" in set(api.list_entities()["entity"])
    # the same seed gives the same logical data, versions included
    generate_warehouse(schema, tmp_path / "again.duckdb", seed=3, scale=1.0, binding_sql=binding_sql(schema))
    hashes = [logical_data_hash(connect(tmp_path / name)._con, schema) for name in ("w.duckdb", "again.duckdb")]
    assert hashes[0] == hashes[1]
