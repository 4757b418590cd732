"""The ads domain's figures of a warehouse: spend concentration, CTR, weekday share, conversion lag.

The generic profile (:mod:`runtime.world.profile`) adds these under ``domain.ads`` only
when the schema holds the views they read, so another domain's profile carries no
ad-specific section at all.
"""

from __future__ import annotations

import duckdb

__all__ = ["ads_profile", "ADS_VIEWS"]

# The views the sections read: a schema without all of them has no ads figures.
ADS_VIEWS = frozenset({"daily_stat", "ad", "ad_group", "campaign", "click", "conversion"})

_WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

_ADVERTISER_SPEND = """
SELECT c.advertiser_id, sum(s.cost) AS spend
FROM daily_stat s JOIN ad a ON a.id = s.ad_id JOIN ad_group g ON g.id = a.ad_group_id
JOIN campaign c ON c.id = g.campaign_id GROUP BY c.advertiser_id
"""


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


def _one(con, sql: str) -> tuple:
    return con.execute(sql).fetchall()[0]


def _section(con, build):
    try:
        return build(con)
    except duckdb.Error:
        return None     # the view holds no field the section reads (a trimmed ads schema)


def ads_profile(con, views: list[str]) -> dict | None:
    """The ads figures, or None when the schema lacks a view they read."""
    if not ADS_VIEWS <= set(views):
        return None
    return {"advertiser_spend": _section(con, _spend), "ctr": _section(con, _ctr),
            "weekday_impression_share": _section(con, _weekday), "conversion_lag": _section(con, _conversion_lag)}
