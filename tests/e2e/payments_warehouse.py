"""A payments warehouse built from nothing, for the tests that start a project on a
domain craft was not written for: 22 raw tables, string ids (`cus_0001`, `ch_00042`),
amounts in cents (named `amount`, with the unit in the dbt docs only), entity names that
are common words (price, card, charge, plan), some foreign keys that point nowhere (a
refund of a deleted charge, a card of a customer that was merged away) and id columns
that hold no value yet (`charges.payout_id`, `refunds.balance_transaction_id`).

`build_payments_warehouse(path)` writes the DuckDB file; it is deterministic (one
seeded `random.Random`) and takes about a second. `build_payments_dbt_project(path)`
writes the dbt project that documents it: column docs, `accepted_values` and
`relationships` tests.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd

__all__ = ["build_payments_warehouse", "build_payments_dbt_project", "TABLES", "DBT_COLUMNS"]

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
          "status VARCHAR, amount_due BIGINT, currency_code VARCHAR, created_at TIMESTAMP, due_date DATE",
          [(i, rng.choice(customers), rng.choice(subscriptions), rng.choice(["draft", "open", "paid", "void"]),
            rng.randrange(500, 50000), rng.choice(currencies), when(), date(2024, 1, 1) + timedelta(rng.randrange(400)))
           for i in invoices])
    table("invoice_lines", "invoice_line_id VARCHAR PRIMARY KEY, invoice_id VARCHAR, price_id VARCHAR, "
          "quantity INTEGER, amount BIGINT",
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
          "card_id VARCHAR, payout_id VARCHAR, amount BIGINT, amount_refunded BIGINT, currency_code VARCHAR, "
          "status VARCHAR, captured BOOLEAN, created_at TIMESTAMP",
          [(c, rng.choice(customers), rng.choice(merchants), rng.choice(invoices) if rng.random() < 0.6 else None,
            rng.choice(cards), None, rng.randrange(100, 80000), rng.choice([0, 0, 0, 500]), rng.choice(currencies),
            rng.choice(["succeeded", "succeeded", "succeeded", "failed", "pending"]), rng.random() < 0.9, when())
           for c in charges])
    # Dirty: some refunds of charges deleted from the warehouse.
    table("refunds", "refund_id VARCHAR PRIMARY KEY, charge_id VARCHAR, balance_transaction_id VARCHAR, amount BIGINT, "
          "reason VARCHAR, created_at TIMESTAMP",
          [(r, rng.choice(charges) if rng.random() > 0.05 else f"ch_9{rng.randrange(9999):04d}", None,
            rng.randrange(100, 20000), rng.choice(["duplicate", "fraudulent", "requested_by_customer"]), when())
           for r in _ids("re", 200)])
    table("disputes", "dispute_id VARCHAR PRIMARY KEY, charge_id VARCHAR, amount BIGINT, status VARCHAR, "
          "opened_at TIMESTAMP",
          [(d, rng.choice(charges), rng.randrange(100, 20000), rng.choice(["won", "lost", "needs_response"]), when())
           for d in _ids("dp", 60)])
    payouts = _ids("po", 150)
    table("payouts", "payout_id VARCHAR PRIMARY KEY, merchant_id VARCHAR, amount BIGINT, status VARCHAR, "
          "arrival_date DATE",
          [(p, rng.choice(merchants), rng.randrange(10000, 900000), rng.choice(["paid", "pending", "failed"]),
            date(2024, 1, 1) + timedelta(rng.randrange(366))) for p in payouts])
    table("balance_transactions", "balance_transaction_id VARCHAR PRIMARY KEY, merchant_id VARCHAR, "
          "source_id VARCHAR, txn_type VARCHAR, amount BIGINT, fee BIGINT, created_at TIMESTAMP",
          [(b, rng.choice(merchants), rng.choice(charges), rng.choice(["charge", "refund", "payout", "adjustment"]),
            rng.randrange(-20000, 80000), rng.randrange(0, 900), when()) for b in _ids("txn", 1800)])
    table("fees", "fee_id VARCHAR PRIMARY KEY, charge_id VARCHAR, fee_type VARCHAR, amount BIGINT",
          [(f, rng.choice(charges), rng.choice(["processing", "application", "tax"]), rng.randrange(10, 900))
           for f in _ids("fee", 1500)])
    table("events", "event_id VARCHAR PRIMARY KEY, event_type VARCHAR, object_id VARCHAR, created_at TIMESTAMP",
          [(e, rng.choice(["charge.succeeded", "charge.failed", "invoice.paid", "customer.created"]),
            rng.choice(charges), when()) for e in _ids("evt", 800)])
    con.close()
    return path


# ------------------------------------------------------------------ its dbt project

def _money(doc: str) -> dict:
    return {"description": doc}


def _enum(doc: str, values: list[str]) -> dict:
    return {"description": doc, "data_tests": [{"accepted_values": {"values": values}}]}


def _link(doc: str, table: str, column: str) -> dict:
    return {"description": doc,
            "data_tests": [{"relationships": {"to": f"source('pay', '{table}')", "field": column}}]}


def _key(doc: str) -> dict:
    return {"description": doc, "data_tests": ["unique", "not_null"]}


# What the analytics team wrote about the raw tables: money documented in cents (most
# columns have no `_cents` suffix), closed value lists as `accepted_values` tests or in
# prose, and the links as `relationships` tests, two of them on columns whose name names
# no table (`source_id`) or that hold no value at all (`balance_transaction_id`).
DBT_COLUMNS: dict[str, dict[str, dict]] = {
    "countries": {"country_code": _key("ISO 3166 country code"),
                  "region": {"description": "Sales region of the country: one of amer, emea or apac."}},
    "currencies": {"currency_code": _key("ISO 4217 currency code, lower case")},
    "customers": {"customer_id": _key("Customer id, `cus_` followed by digits")},
    "addresses": {"address_id": _key("Address id")},
    "merchants": {"merchant_id": _key("Connected account id, `acct_` followed by digits")},
    "products": {"product_id": _key("Product id"),
                 "merchant_id": _link("The merchant selling the product", "merchants", "merchant_id")},
    "events": {"event_id": _key("Event id"),
               "event_type": {"description": "What happened, as `object.verb`"}},
    "prices": {"price_id": _key("Price id"),
               "product_id": _link("The product this price sells", "products", "product_id"),
               "unit_amount_cents": _money("Price of one unit, in cents"),
               "billing_interval": _enum("How often the price is billed", ["month", "year", "one_time"])},
    "plans": {"plan_id": _key("Plan id"), "price_id": _link("The price billed for the plan", "prices", "price_id")},
    "coupons": {"duration": _enum("How long the discount applies", ["once", "forever", "repeating"])},
    "subscriptions": {
        "customer_id": _link("The subscribed customer", "customers", "customer_id"),
        "plan_id": _link("The plan subscribed to", "plans", "plan_id"),
        "status": _enum("Subscription state", ["active", "past_due", "canceled", "trialing", "incomplete"])},
    "subscription_items": {
        "subscription_id": _link("The subscription the item belongs to", "subscriptions", "subscription_id"),
        "price_id": _link("The price of the item", "prices", "price_id")},
    "invoices": {"customer_id": _link("The billed customer", "customers", "customer_id"),
                 "subscription_id": _link("The subscription billed", "subscriptions", "subscription_id"),
                 "amount_due": _money("Amount due, in cents."),
                 "status": _enum("Invoice state", ["draft", "open", "paid", "void", "uncollectible"])},
    "invoice_lines": {"amount": _money("Line amount in the smallest currency unit.")},
    "payment_methods": {"method_type": _enum("Kind of payment method", ["card", "sepa_debit", "ach_debit"])},
    "cards": {"customer_id": _link("The card holder (some were merged into other customers)", "customers",
                                   "customer_id")},
    "charges": {"customer_id": _link("The customer charged", "customers", "customer_id"),
                "amount": _money("Amount charged, in cents."),
                "amount_refunded": _money("Amount refunded so far, in cents."),
                "status": _enum("Outcome of the charge", ["succeeded", "failed", "pending"])},
    "refunds": {"charge_id": _link("The refunded charge (some were deleted)", "charges", "charge_id"),
                "balance_transaction_id": _link("Ledger entry of the refund (not synced yet)",
                                                "balance_transactions", "balance_transaction_id"),
                "amount": _money("Refunded amount in cents.")},
    "disputes": {"charge_id": _link("The disputed charge", "charges", "charge_id"),
                 "amount": _money("Disputed amount, in cents."),
                 "status": _enum("Dispute state", ["won", "lost", "needs_response", "under_review"])},
    "payouts": {"amount": _money("Amount paid out, in cents.")},
    "balance_transactions": {"source_id": _link("The charge the entry moves money for", "charges", "charge_id"),
                             "amount": _money("Gross amount in cents (negative for refunds and payouts)."),
                             "fee": _money("Fees taken, in cents.")},
    "fees": {"amount": _money("Fee amount, in the smallest currency unit.")},
}


def build_payments_dbt_project(path: str | Path) -> Path:
    """The warehouse's dbt project: dbt_project.yml and models/sources.yml documenting the
    raw `pay` tables (see DBT_COLUMNS); deterministic text."""
    import yaml

    root = Path(path)
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(yaml.safe_dump(
        {"name": "payments", "version": "1.0.0", "config-version": 2, "profile": "payments"}, sort_keys=False))
    tables = [{"name": table, "description": f"Raw {table.replace('_', ' ')} as the payments connector lands them",
               "columns": [{"name": column, **spec} for column, spec in DBT_COLUMNS.get(table, {}).items()]}
              for table in TABLES]
    sources = {"version": 2, "sources": [{"name": "pay", "schema": "pay", "tables": tables}]}
    (root / "models" / "sources.yml").write_text(yaml.safe_dump(sources, sort_keys=False, width=120))
    return root


if __name__ == "__main__":
    import sys

    print(build_payments_warehouse(sys.argv[1] if len(sys.argv) > 1 else "payments.duckdb"))
