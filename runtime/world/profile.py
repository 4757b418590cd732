"""What a generated warehouse looks like, in figures: the data profile.

Read only through the logical views, so the profile of two warehouses that differ
only in physical names is identical. Sections that need an ads entity the schema
lacks are reported as ``null`` rather than failing.

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

from runtime.world.api import CATALOG_SCHEMA

__all__ = ["data_profile", "render_profile", "main"]

_WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

_ADVERTISER_SPEND = """
SELECT c.advertiser_id, sum(s.cost) AS spend
FROM daily_stat s JOIN ad a ON a.id = s.ad_id JOIN ad_group g ON g.id = a.ad_group_id
JOIN campaign c ON c.id = g.campaign_id GROUP BY c.advertiser_id
"""


def _one(con, sql: str) -> tuple:
    return con.execute(sql).fetchall()[0]


def _spend(con) -> dict:
    share, p50, p90, p99, n = _one(con, f"""
        WITH spend AS ({_ADVERTISER_SPEND}), ranked AS (
          SELECT spend, row_number() OVER (ORDER BY spend DESC) AS r, count(*) OVER () AS n FROM spend)
        SELECT sum(spend) FILTER (WHERE r <= greatest(1, round(n * 0.1))) / sum(spend),
               quantile_cont(spend, 0.5), quantile_cont(spend, 0.9), quantile_cont(spend, 0.99), count(*)
        FROM ranked""")
    return {"advertisers": n, "top10pct_share": round(share, 4), "p50": round(p50, 2), "p90": round(p90, 2),
            "p99": round(p99, 2)}


def _ctr(con) -> dict:
    """CTR per ad with at least 1,000 impressions (smaller ads' CTR is mostly noise)."""
    p5, p50, p95, inside, n = _one(con, """
        WITH per_ad AS (SELECT sum(clicks) / sum(impressions) AS ctr FROM daily_stat
                        GROUP BY ad_id HAVING sum(impressions) >= 1000)
        SELECT quantile_cont(ctr, 0.05), quantile_cont(ctr, 0.5), quantile_cont(ctr, 0.95),
               avg(CASE WHEN ctr BETWEEN 0.005 AND 0.05 THEN 1.0 ELSE 0.0 END), count(*) FROM per_ad""")
    return {"ads": n, "p5": round(p5, 5), "p50": round(p50, 5), "p95": round(p95, 5),
            "share_0_5pct_to_5pct": round(inside, 4)}


def _weekday(con) -> dict:
    rows = con.execute("""
        SELECT isodow(date) AS dow, sum(impressions) / (SELECT sum(impressions) FROM daily_stat)
        FROM daily_stat GROUP BY dow ORDER BY dow""").fetchall()
    return {_WEEKDAYS[dow - 1]: round(share, 4) for dow, share in rows}


def _conversion_lag(con) -> dict:
    rows = con.execute("""
        SELECT least(date_diff('day', k.clicked_at::DATE, c.converted_at::DATE), 8) AS lag, count(*)
        FROM conversion c JOIN click k ON k.id = c.click_id GROUP BY lag ORDER BY lag""").fetchall()
    total = sum(count for _, count in rows) or 1
    p50, p90, mean = _one(con, """
        SELECT quantile_disc(lag, 0.5), quantile_disc(lag, 0.9), avg(lag) FROM (
          SELECT date_diff('day', k.clicked_at::DATE, c.converted_at::DATE) AS lag
          FROM conversion c JOIN click k ON k.id = c.click_id)""")
    histogram = {("8+" if lag == 8 else str(lag)): round(count / total, 4) for lag, count in rows}
    return {"conversions_with_click": total, "p50_days": p50, "p90_days": p90,
            "mean_days": round(mean or 0.0, 3), "share_by_days": histogram}


def _views(con) -> list[str]:
    return [row[0] for row in con.execute(f"SELECT view FROM {CATALOG_SCHEMA}.entities ORDER BY position").fetchall()]


def _null_shares(con, views: list[str]) -> dict:
    rows = con.execute(f"SELECT view, field FROM {CATALOG_SCHEMA}.fields WHERE nullable ORDER BY view_position, position").fetchall()
    shares = {}
    for view, field in rows:
        share = _one(con, f'SELECT coalesce(avg(CASE WHEN "{field}" IS NULL THEN 1.0 ELSE 0.0 END), 0) FROM "{view}"')[0]
        shares[f"{view}.{field}"] = round(share, 4)
    return shares


def _section(con, build):
    try:
        return build(con)
    except duckdb.Error:
        return None     # this schema lacks an entity or field the section reads


def data_profile(db_path: str | Path) -> dict:
    """Row counts, spend concentration, CTR, weekday seasonality, conversion lag, NULL shares."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        views = _views(con)
        return {
            "row_counts": {v: _one(con, f'SELECT count(*) FROM "{v}"')[0] for v in views},
            "advertiser_spend": _section(con, _spend),
            "ctr": _section(con, _ctr),
            "weekday_impression_share": _section(con, _weekday),
            "conversion_lag": _section(con, _conversion_lag),
            "null_shares": _null_shares(con, views),
        }
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
    shape = Table(title="Shape of the data")
    shape.add_column("figure")
    shape.add_column("value", justify="right")
    for section in ("advertiser_spend", "ctr", "conversion_lag"):
        for key, value in (profile.get(section) or {}).items():
            shape.add_row(f"{section}.{key}", json.dumps(value) if isinstance(value, dict) else str(value))
    for day, share in (profile.get("weekday_impression_share") or {}).items():
        shape.add_row(f"impressions share {day}", f"{share:.2%}")
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
