"""What a warehouse looks like, in figures: the data profile.

Generic over any schema: rows per entity, the NULL share of nullable fields, the range
of every number and money field, and the time span of every date and timestamp field.
A schema of the ads domain also gets its own figures under ``domain.ads``
(:mod:`runtime.world.ads_profile`). Read only through the logical views, so the profile
of two warehouses that differ only in physical names is identical.

Run it as ``python -m runtime.world.profile WAREHOUSE.duckdb [--format json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from runtime.world.ads_profile import ads_profile
from runtime.world.api import CATALOG_SCHEMA

__all__ = ["data_profile", "render_profile", "main"]

_NUMBER_TYPES = ("int", "float", "money")
_TIME_TYPES = ("date", "timestamp")


def _one(con, sql: str) -> tuple:
    return con.execute(sql).fetchall()[0]


def _views(con) -> list[str]:
    return [row[0] for row in con.execute(f"SELECT view FROM {CATALOG_SCHEMA}.entities ORDER BY position").fetchall()]


def _null_shares(con, views: list[str]) -> dict:
    rows = con.execute(f"SELECT view, field FROM {CATALOG_SCHEMA}.fields WHERE nullable ORDER BY view_position, position").fetchall()
    shares = {}
    for view, field in rows:
        share = _one(con, f'SELECT coalesce(avg(CASE WHEN "{field}" IS NULL THEN 1.0 ELSE 0.0 END), 0) FROM "{view}"')[0]
        shares[f"{view}.{field}"] = round(share, 4)
    return shares


def _fields_of(con, types: tuple[str, ...]) -> list[tuple[str, str]]:
    marks = ", ".join("?" for _ in types)
    return con.execute(f"SELECT view, field FROM {CATALOG_SCHEMA}.fields WHERE type IN ({marks}) "
                       "ORDER BY view_position, position", list(types)).fetchall()


def _value_ranges(con) -> dict:
    """min, max and mean of every int, float and money field (None where it holds no value)."""
    ranges = {}
    for view, field in _fields_of(con, _NUMBER_TYPES):
        low, high, mean = _one(con, f'SELECT min("{field}"), max("{field}"), avg("{field}") FROM "{view}"')
        ranges[f"{view}.{field}"] = {"min": _number(low), "max": _number(high), "mean": _number(mean)}
    return ranges


def _number(value):
    if value is None:
        return None
    value = float(value)
    return int(value) if value.is_integer() else round(value, 4)


def _time_spans(con) -> dict:
    """First and last value and the days between them, of every date and timestamp field."""
    spans = {}
    for view, field in _fields_of(con, _TIME_TYPES):
        first, last = _one(con, f'SELECT min("{field}"), max("{field}") FROM "{view}"')
        dated = hasattr(first, "isoformat") and hasattr(last, "isoformat")   # not a text column typed date
        spans[f"{view}.{field}"] = {"first": first.isoformat() if dated else first,
                                    "last": last.isoformat() if dated else last,
                                    "days": (last - first).days if dated else None}
    return spans


def data_profile(db_path: str | Path) -> dict:
    """Row counts, NULL shares, value ranges and time spans; a known domain's own figures."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        views = _views(con)
        profile = {
            "row_counts": {v: _one(con, f'SELECT count(*) FROM "{v}"')[0] for v in views},
            "null_shares": _null_shares(con, views),
            "value_ranges": _value_ranges(con),
            "time_spans": _time_spans(con),
        }
        ads = ads_profile(con, views)
        if ads is not None:
            profile["domain"] = {"ads": ads}
        return profile
    finally:
        con.close()


def render_profile(profile: dict, console: Console) -> None:
    """The profile as rich tables."""
    counts = Table(title="Rows per entity")
    counts.add_column("entity")
    counts.add_column("rows", justify="right")
    for view, rows in profile["row_counts"].items():
        counts.add_row(view, f"{rows:,}")
    console.print(counts)
    ranges = Table(title="Numbers and money: range and mean")
    for column in ("field", "min", "max", "mean"):
        ranges.add_column(column, justify="left" if column == "field" else "right")
    for field, r in profile.get("value_ranges", {}).items():
        ranges.add_row(field, *(str(r[k]) for k in ("min", "max", "mean")))
    console.print(ranges)
    spans = Table(title="Dates and timestamps: time span")
    for column in ("field", "first", "last", "days"):
        spans.add_column(column, justify="right" if column == "days" else "left")
    for field, s in profile.get("time_spans", {}).items():
        spans.add_row(field, str(s["first"]), str(s["last"]), str(s["days"]))
    console.print(spans)
    for domain, sections in (profile.get("domain") or {}).items():
        shape = Table(title=f"Shape of the data ({domain})")
        shape.add_column("figure")
        shape.add_column("value", justify="right")
        for section, figures in sections.items():
            for key, value in (figures or {}).items():
                shape.add_row(f"{section}.{key}", json.dumps(value) if isinstance(value, dict) else str(value))
        console.print(shape)
    nulls = Table(title="NULL share of nullable fields")
    nulls.add_column("field")
    nulls.add_column("null share", justify="right")
    for field, share in profile["null_shares"].items():
        nulls.add_row(field, f"{share:.1%}")
    console.print(nulls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.world.profile", description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", help="a warehouse.duckdb written by the world step")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    path = Path(args.warehouse)
    if not path.is_file():
        print(f"error: warehouse `{path}` does not exist; build it with `craftc run PLAN_DIR --only world`",
              file=sys.stderr)
        return 1
    try:
        profile = data_profile(path)
    except duckdb.Error as error:
        print(f"error: `{path}` is not a craft warehouse ({str(error).splitlines()[0]}); "
              "rebuild it with `craftc run PLAN_DIR --only world`", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(profile, indent=2, sort_keys=True))
    else:
        render_profile(profile, Console())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
