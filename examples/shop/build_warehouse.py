"""Build the shop example's warehouse: an existing DuckDB database, as a team has one.

The shop domain is the second domain of the examples: its schema spec was not written
by hand but imported from this warehouse with `craftc import`, then reviewed.
Physical names are what a legacy retail system would use; a few tables declare keys,
others leave them to be guessed.

    python examples/shop/build_warehouse.py examples/shop/shop.duckdb [--seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

DDL = """
CREATE SCHEMA sales;
CREATE TABLE sales.store_dim (
    store_id INTEGER PRIMARY KEY, store_nm VARCHAR NOT NULL, region_cd VARCHAR NOT NULL,
    opened_dt DATE NOT NULL);
CREATE TABLE sales.cust_mstr (
    cust_id INTEGER PRIMARY KEY, cust_nm VARCHAR NOT NULL, ctry_cd VARCHAR NOT NULL,
    loyalty_tier VARCHAR NOT NULL, sgnup_dt DATE NOT NULL);
CREATE TABLE sales.prod_cat (
    sku_cd VARCHAR NOT NULL, prod_nm VARCHAR NOT NULL, ctgy_cd VARCHAR NOT NULL,
    list_prc_cents BIGINT NOT NULL);
CREATE TABLE sales.ord_hdr (
    ord_id INTEGER PRIMARY KEY, cust_id INTEGER NOT NULL REFERENCES sales.cust_mstr (cust_id),
    store_id INTEGER NOT NULL REFERENCES sales.store_dim (store_id), ord_ts TIMESTAMP NOT NULL,
    sts_cd VARCHAR NOT NULL);
CREATE TABLE sales.ord_ln (
    ln_id INTEGER NOT NULL, ord_id INTEGER NOT NULL, sku_cd VARCHAR NOT NULL, qty INTEGER NOT NULL,
    unit_prc_cents BIGINT NOT NULL);
COMMENT ON TABLE sales.ord_hdr IS 'One checkout by one customer in one store';
COMMENT ON COLUMN sales.ord_hdr.sts_cd IS 'Order status';
COMMENT ON TABLE sales.prod_cat IS 'Products on sale';
"""

REGIONS = ["north", "south", "east", "west"]
CATEGORIES = ["grocery", "apparel", "home", "toys", "garden"]
TIERS = ["bronze", "silver", "gold"]
STATUSES = ["placed", "shipped", "returned", "cancelled"]


def build(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    if path.exists():
        path.unlink()
    con = duckdb.connect(str(path))
    con.execute(DDL)
    stores = pd.DataFrame({
        "store_id": range(1, 13), "store_nm": [f"Store {i:02d}" for i in range(1, 13)],
        "region_cd": [REGIONS[i % 4] for i in range(12)],
        "opened_dt": pd.to_datetime("2019-01-01") + pd.to_timedelta(rng.integers(0, 1500, 12), unit="D")})
    customers = pd.DataFrame({
        "cust_id": range(1, 401), "cust_nm": [f"Customer {i:03d}" for i in range(1, 401)],
        "ctry_cd": rng.choice(["US", "GB", "DE", "FR"], 400, p=[.5, .2, .15, .15]),
        "loyalty_tier": rng.choice(TIERS, 400, p=[.6, .3, .1]),
        "sgnup_dt": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 1400, 400), unit="D")})
    products = pd.DataFrame({
        "sku_cd": [f"SKU{i:04d}" for i in range(1, 121)], "prod_nm": [f"Product {i}" for i in range(1, 121)],
        "ctgy_cd": [CATEGORIES[i % 5] for i in range(120)],
        "list_prc_cents": (np.exp(rng.normal(7.5, 0.8, 120))).astype(int)})
    n_orders = 4000
    orders = pd.DataFrame({
        "ord_id": range(1, n_orders + 1), "cust_id": rng.integers(1, 401, n_orders),
        "store_id": rng.integers(1, 13, n_orders),
        "ord_ts": pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 180 * 24 * 60, n_orders), unit="m"),
        "sts_cd": rng.choice(STATUSES, n_orders, p=[.2, .68, .08, .04])})
    per_order = rng.integers(1, 5, n_orders)
    sku_idx = rng.integers(0, 120, per_order.sum())
    lines = pd.DataFrame({
        "ln_id": range(1, per_order.sum() + 1), "ord_id": np.repeat(orders["ord_id"].to_numpy(), per_order),
        "sku_cd": products["sku_cd"].to_numpy()[sku_idx], "qty": rng.integers(1, 4, per_order.sum()),
        "unit_prc_cents": products["list_prc_cents"].to_numpy()[sku_idx]})
    for table, frame in (("store_dim", stores), ("cust_mstr", customers), ("prod_cat", products),
                         ("ord_hdr", orders), ("ord_ln", lines)):
        con.register("frame", frame)
        con.execute(f"INSERT INTO sales.{table} SELECT * FROM frame")
        con.unregister("frame")
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    build(args.path, args.seed)
    print(f"wrote {args.path}")


if __name__ == "__main__":
    main()
