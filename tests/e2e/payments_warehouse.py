"""A payments warehouse built from nothing, for the tests that start a project on a
domain craft was not written for: 22 raw tables, string ids (`cus_0001`, `ch_00042`),
amounts in cents, entity names that are common words (price, card, charge, plan), and
some foreign keys that point nowhere (a refund of a deleted charge, a card of a
customer that was merged away).

`build_payments_warehouse(path)` writes the DuckDB file; it is deterministic (one
seeded `random.Random`) and takes about a second.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd

__all__ = ["build_payments_warehouse", "TABLES"]

TABLES = (
    "countries", "currencies", "customers", "addresses", "merchants", "products", "prices", "plans",
    "coupons", "subscriptions", "subscription_items", "invoices", "invoice_lines", "payment_methods",
    "cards", "charges", "refunds", "disputes", "payouts", "balance_transactions", "fees", "events",
)


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}_{i:05d}" for i in range(1, n + 1)]


def build_payments_warehouse(path: str | Path, seed: int = 7) -> Path:
    rng = random.Random(seed)
    path = Path(path)
    if path.exists():
        path.unlink()
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA pay")
    start = datetime(2024, 1, 1)

    def when(days: int = 365) -> datetime:
        return start + timedelta(minutes=rng.randrange(days * 24 * 60))

    def table(name: str, ddl: str, rows: list[tuple]) -> None:
        con.execute(f"CREATE TABLE pay.{name} ({ddl})")
        if rows:
            columns = [c.strip().split()[0] for c in ddl.split(",")]
            frame = pd.DataFrame(rows, columns=columns)       # one bulk insert, not a row at a time
            con.register("_rows", frame)
            con.execute(f"INSERT INTO pay.{name} SELECT * FROM _rows")
            con.unregister("_rows")

    countries = ["US", "GB", "DE", "FR", "NL", "CA", "AU", "JP"]
    table("countries", "country_code VARCHAR PRIMARY KEY, country_name VARCHAR, region VARCHAR",
          [(c, f"Country {c}", rng.choice(["amer", "emea", "apac"])) for c in countries])
    currencies = ["usd", "gbp", "eur", "cad", "aud", "jpy"]
    table("currencies", "currency_code VARCHAR PRIMARY KEY, minor_units INTEGER, currency_name VARCHAR",
          [(c, 0 if c == "jpy" else 2, c.upper()) for c in currencies])

    customers = _ids("cus", 300)
    table("customers", "customer_id VARCHAR PRIMARY KEY, email VARCHAR, customer_name VARCHAR, "
          "country_code VARCHAR, created_at TIMESTAMP, is_delinquent BOOLEAN",
          [(c, f"{c}@example.com", f"Customer {i}", rng.choice(countries), when(), rng.random() < 0.1)
           for i, c in enumerate(customers)])
    table("addresses", "address_id VARCHAR PRIMARY KEY, customer_id VARCHAR, city VARCHAR, postal_code VARCHAR, "
          "country_code VARCHAR",
          [(a, rng.choice(customers), rng.choice(["Springfield", "Riverton", "Lakeside", "Hillview"]),
            f"{rng.randrange(10000, 99999)}", rng.choice(countries)) for a in _ids("addr", 320)])
    merchants = _ids("acct", 25)
    table("merchants", "merchant_id VARCHAR PRIMARY KEY, business_name VARCHAR, mcc VARCHAR, "
          "country_code VARCHAR, onboarded_at TIMESTAMP",
          [(m, f"Shop {i}", rng.choice(["5411", "5812", "5999", "7372"]), rng.choice(countries), when(120))
           for i, m in enumerate(merchants)])
    products = _ids("prod", 40)
    table("products", "product_id VARCHAR PRIMARY KEY, merchant_id VARCHAR, product_name VARCHAR, "
          "active BOOLEAN, created_at TIMESTAMP",
          [(p, rng.choice(merchants), f"Product {i}", rng.random() < 0.85, when(200)) for i, p in enumerate(products)])
    prices = _ids("price", 80)
    table("prices", "price_id VARCHAR PRIMARY KEY, product_id VARCHAR, currency_code VARCHAR, "
          "unit_amount_cents BIGINT, billing_interval VARCHAR, active BOOLEAN",
          [(p, rng.choice(products), rng.choice(currencies), rng.choice([500, 900, 1900, 4900, 9900]),
            rng.choice(["month", "year", "one_time"]), rng.random() < 0.9) for p in prices])
    plans = _ids("plan", 12)
    table("plans", "plan_id VARCHAR PRIMARY KEY, price_id VARCHAR, plan_name VARCHAR, trial_days INTEGER",
          [(p, rng.choice(prices), f"Plan {i}", rng.choice([0, 7, 14, 30])) for i, p in enumerate(plans)])
    coupons = _ids("coupon", 10)
    table("coupons", "coupon_id VARCHAR PRIMARY KEY, percent_off INTEGER, duration VARCHAR, valid BOOLEAN",
          [(c, rng.choice([10, 20, 25, 50]), rng.choice(["once", "forever", "repeating"]), rng.random() < 0.8)
           for c in coupons])
    subscriptions = _ids("sub", 200)
    table("subscriptions", "subscription_id VARCHAR PRIMARY KEY, customer_id VARCHAR, plan_id VARCHAR, "
          "coupon_id VARCHAR, status VARCHAR, started_at TIMESTAMP, canceled_at TIMESTAMP",
          [(s, rng.choice(customers), rng.choice(plans), rng.choice(coupons) if rng.random() < 0.2 else None,
            rng.choice(["active", "past_due", "canceled", "trialing"]), when(),
            when() if rng.random() < 0.25 else None) for s in subscriptions])
    table("subscription_items", "subscription_item_id VARCHAR PRIMARY KEY, subscription_id VARCHAR, "
          "price_id VARCHAR, quantity INTEGER",
          [(si, rng.choice(subscriptions), rng.choice(prices), rng.randrange(1, 5)) for si in _ids("si", 260)])
    invoices = _ids("in", 600)
    table("invoices", "invoice_id VARCHAR PRIMARY KEY, customer_id VARCHAR, subscription_id VARCHAR, "
          "status VARCHAR, total_cents BIGINT, currency_code VARCHAR, created_at TIMESTAMP, due_date DATE",
          [(i, rng.choice(customers), rng.choice(subscriptions), rng.choice(["draft", "open", "paid", "void"]),
            rng.randrange(500, 50000), rng.choice(currencies), when(), date(2024, 1, 1) + timedelta(rng.randrange(400)))
           for i in invoices])
    table("invoice_lines", "invoice_line_id VARCHAR PRIMARY KEY, invoice_id VARCHAR, price_id VARCHAR, "
          "quantity INTEGER, amount_cents BIGINT",
          [(il, rng.choice(invoices), rng.choice(prices), rng.randrange(1, 4), rng.randrange(500, 20000))
           for il in _ids("il", 1200)])
    payment_methods = _ids("pm", 350)
    table("payment_methods", "payment_method_id VARCHAR PRIMARY KEY, customer_id VARCHAR, method_type VARCHAR, "
          "created_at TIMESTAMP",
          [(pm, rng.choice(customers), rng.choice(["card", "sepa_debit", "ach_debit"]), when())
           for pm in payment_methods])
    cards = _ids("card", 300)
    # Dirty: a few cards of customers merged away (no such customer any more).
    table("cards", "card_id VARCHAR PRIMARY KEY, payment_method_id VARCHAR, customer_id VARCHAR, brand VARCHAR, "
          "last4 VARCHAR, exp_year INTEGER",
          [(c, rng.choice(payment_methods), rng.choice(customers) if rng.random() > 0.03 else "cus_99999",
            rng.choice(["visa", "mastercard", "amex"]), f"{rng.randrange(10000):04d}", rng.randrange(2025, 2031))
           for c in cards])
    charges = _ids("ch", 1500)
    table("charges", "charge_id VARCHAR PRIMARY KEY, customer_id VARCHAR, merchant_id VARCHAR, invoice_id VARCHAR, "
          "card_id VARCHAR, amount_cents BIGINT, currency_code VARCHAR, status VARCHAR, captured BOOLEAN, "
          "created_at TIMESTAMP",
          [(c, rng.choice(customers), rng.choice(merchants), rng.choice(invoices) if rng.random() < 0.6 else None,
            rng.choice(cards), rng.randrange(100, 80000), rng.choice(currencies),
            rng.choice(["succeeded", "succeeded", "succeeded", "failed", "pending"]), rng.random() < 0.9, when())
           for c in charges])
    # Dirty: some refunds of charges deleted from the warehouse.
    table("refunds", "refund_id VARCHAR PRIMARY KEY, charge_id VARCHAR, amount_cents BIGINT, reason VARCHAR, "
          "created_at TIMESTAMP",
          [(r, rng.choice(charges) if rng.random() > 0.05 else f"ch_9{rng.randrange(9999):04d}",
            rng.randrange(100, 20000), rng.choice(["duplicate", "fraudulent", "requested_by_customer"]), when())
           for r in _ids("re", 200)])
    table("disputes", "dispute_id VARCHAR PRIMARY KEY, charge_id VARCHAR, amount_cents BIGINT, status VARCHAR, "
          "opened_at TIMESTAMP",
          [(d, rng.choice(charges), rng.randrange(100, 20000), rng.choice(["won", "lost", "needs_response"]), when())
           for d in _ids("dp", 60)])
    payouts = _ids("po", 150)
    table("payouts", "payout_id VARCHAR PRIMARY KEY, merchant_id VARCHAR, amount_cents BIGINT, status VARCHAR, "
          "arrival_date DATE",
          [(p, rng.choice(merchants), rng.randrange(10000, 900000), rng.choice(["paid", "pending", "failed"]),
            date(2024, 1, 1) + timedelta(rng.randrange(366))) for p in payouts])
    table("balance_transactions", "balance_transaction_id VARCHAR PRIMARY KEY, merchant_id VARCHAR, "
          "source_id VARCHAR, txn_type VARCHAR, amount_cents BIGINT, fee_cents BIGINT, created_at TIMESTAMP",
          [(b, rng.choice(merchants), rng.choice(charges), rng.choice(["charge", "refund", "payout", "adjustment"]),
            rng.randrange(-20000, 80000), rng.randrange(0, 900), when()) for b in _ids("txn", 1800)])
    table("fees", "fee_id VARCHAR PRIMARY KEY, charge_id VARCHAR, fee_type VARCHAR, amount_cents BIGINT",
          [(f, rng.choice(charges), rng.choice(["processing", "application", "tax"]), rng.randrange(10, 900))
           for f in _ids("fee", 1500)])
    table("events", "event_id VARCHAR PRIMARY KEY, event_type VARCHAR, object_id VARCHAR, created_at TIMESTAMP",
          [(e, rng.choice(["charge.succeeded", "charge.failed", "invoice.paid", "customer.created"]),
            rng.choice(charges), when()) for e in _ids("evt", 800)])
    con.close()
    return path


if __name__ == "__main__":
    import sys

    print(build_payments_warehouse(sys.argv[1] if len(sys.argv) > 1 else "payments.duckdb"))
