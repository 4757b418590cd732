"""The ads world's fact entities (daily stats, clicks, conversions, invoices) and tests.

Facts are drawn from the dimensions: a daily stat row is an (ad, date, device, geo)
inside the ad's campaign serving window; clicks are a 1-in-10 sample of the daily
clicks; conversions follow their clicks by a lag of days and are censored at the
end of the data (a conversion that has not happened yet is not in the log);
invoices bill what the daily stats say each account spent.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd

from runtime.world import ads_domain as d
from runtime.world.context import END_DATE, START_DATE, WorldContext, random_dates

__all__ = ["build_daily_stat", "build_click", "build_conversion", "build_invoice", "build_experiment",
           "build_experiment_arm", "build_label"]

_CTR_MEDIAN = {"search": 0.035, "shopping": 0.018, "display": 0.009, "video": 0.011}
_CVR_BY_OBJECTIVE = {"conversions": 0.05, "app_installs": 0.035, "traffic": 0.02, "awareness": 0.008}
_CPM_MEDIAN = {"display": 3.5, "video": 11.0}


def _ad_context(ctx: WorldContext) -> pd.DataFrame:
    """Per ad: campaign facts the daily rows need (channel, window, weights, industry)."""
    ads, groups, campaigns = ctx.frames["Ad"], ctx.frames["AdGroup"], ctx.frames["Campaign"]
    campaign = d._lookup(groups, ads["ad_group_id"], "campaign_id")
    frame = pd.DataFrame({"ad_id": ads["id"].to_numpy(), "ad_group_id": ads["ad_group_id"].to_numpy(),
                          "campaign_id": campaign})
    for column in ("advertiser_id", "account_id", "channel", "objective", "_serve_start", "_serve_end", "_weight"):
        frame[column] = d._lookup(campaigns, campaign, column)
    frame["industry"] = d._lookup(ctx.frames["Advertiser"], frame["advertiser_id"], "industry")
    rng = ctx.rng("DailyStat", "ad_weight")
    frame["weight"] = frame["_weight"].astype(float) * rng.lognormal(0, 0.4, len(frame))
    serving = frame["_serve_end"] >= frame["_serve_start"]
    return frame[serving].reset_index(drop=True)


def build_daily_stat(ctx: WorldContext, entity) -> pd.DataFrame:
    rng = ctx.rng("DailyStat")
    target = max(1, int(round(d.DAILY_STAT_ROWS * ctx.scale)))
    ads = _ad_context(ctx)
    draws = int(target * 1.3) + 100
    # Big advertisers get more rows (weight**0.3) AND bigger rows (see _daily_measures).
    p = ads["weight"].to_numpy() ** 0.3
    pick = rng.choice(len(ads), draws, p=p / p.sum())
    start = ads["_serve_start"].to_numpy().astype("datetime64[D]")[pick]
    span = (ads["_serve_end"].to_numpy().astype("datetime64[D]")[pick] - start).astype(np.int64) + 1
    day = start + np.floor(rng.random(draws) * span).astype("timedelta64[D]")
    devices, geos = ctx.frames["Device"], ctx.frames["Geo"]
    rows = pd.DataFrame({
        "_ad": pick, "date": day,
        "device_id": rng.choice(devices["id"].to_numpy(), draws, p=devices["_weight"].to_numpy()),
        "geo_id": rng.choice(geos["id"].to_numpy(), draws, p=geos["_weight"].to_numpy()),
    })
    rows["ad_id"] = ads["ad_id"].to_numpy()[pick]
    rows = rows.drop_duplicates(["date", "ad_id", "device_id", "geo_id"]).head(target).reset_index(drop=True)
    typical = float(np.median(ads["weight"]))
    return _daily_measures(ctx, rows, ads.iloc[rows["_ad"].to_numpy()].reset_index(drop=True), typical)


def _daily_measures(ctx: WorldContext, rows: pd.DataFrame, ad: pd.DataFrame, typical: float) -> pd.DataFrame:
    rng, n = ctx.rng("DailyStat", "measures"), len(rows)
    channel = ad["channel"].to_numpy()
    weekday = pd.DatetimeIndex(rows["date"]).day_of_week.to_numpy()
    weight = ad["weight"].to_numpy() / typical
    lam = 250 * weight ** 0.5 * d.WEEKDAY_FACTOR[weekday] * rng.lognormal(0, 0.5, n)
    impressions = np.maximum(rng.poisson(np.minimum(lam, 5e7)), 1)
    median_ctr = np.vectorize(_CTR_MEDIAN.get)(channel)
    ctr = np.clip(median_ctr * rng.lognormal(0, 0.45, n), 0.0005, 0.3)
    clicks = rng.binomial(impressions, ctr)
    cpc = np.vectorize(d._CPC_BY_INDUSTRY.get)(ad["industry"].to_numpy()) * rng.lognormal(0, 0.3, n)
    cpm = np.vectorize(lambda c: _CPM_MEDIAN.get(c, 0.0))(channel) * rng.lognormal(0, 0.3, n)
    by_impression = np.isin(channel, ["display", "video"])
    cost = np.where(by_impression, impressions / 1000 * cpm, clicks * cpc)
    cvr = np.vectorize(_CVR_BY_OBJECTIVE.get)(ad["objective"].to_numpy()) * rng.lognormal(0, 0.3, n)
    conversions = rng.binomial(clicks, np.clip(cvr, 0, 1)).astype(float)
    # Data-driven attribution credits fractions of a conversion on some rows.
    fractional = rng.random(n) < 0.1
    conversions = np.where(fractional, np.round(conversions * rng.uniform(0.4, 1.0, n), 2), conversions)
    aov = np.vectorize(d._AOV_BY_INDUSTRY.get)(ad["industry"].to_numpy()) * rng.lognormal(0, 0.35, n)
    placements = ctx.frames["Placement"]
    placement = rng.choice(placements["id"].to_numpy(), n, p=(w := placements["_weight"].to_numpy()) / w.sum())
    position_reported = (channel == "search") & (rows["date"].to_numpy() < np.datetime64("2024-05-01"))
    return pd.DataFrame({
        "id": ctx.ids("DailyStat", n), "ad_id": rows["ad_id"].to_numpy(),
        "device_id": rows["device_id"].to_numpy(), "geo_id": rows["geo_id"].to_numpy(),
        "placement_id": pd.Series(placement).where(by_impression).astype("Int64"),
        "date": rows["date"].to_numpy(), "impressions": impressions.astype(np.int64),
        "clicks": clicks.astype(np.int64), "cost": np.round(cost, 6),
        "conversions": conversions, "conversion_value": np.round(conversions * aov, 6),
        "viewable_impressions": pd.Series(rng.binomial(impressions, rng.beta(6, 4, n))).where(by_impression).astype("Int64"),
        "video_views": pd.Series(rng.binomial(impressions, 0.3)).where(channel == "video").astype("Int64"),
        "avg_position": pd.Series(np.round(rng.uniform(1.0, 4.0, n), 1)).where(position_reported),
        "_cvr": cvr, "_channel": channel, "_account_id": ad["account_id"].to_numpy(),
        "_ad_group_id": ad["ad_group_id"].to_numpy(), "_industry": ad["industry"].to_numpy(),
    })


def build_click(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, stats = ctx.rng("Click"), ctx.frames["DailyStat"]
    logged = rng.binomial(stats["clicks"].to_numpy(), d.CLICK_SAMPLE_RATE)
    row = np.repeat(np.arange(len(stats)), logged)
    n, s = len(row), stats.iloc[row].reset_index(drop=True)
    hour = rng.choice(24, n, p=_hour_profile())
    seconds = hour * 3600 + rng.integers(0, 3600, n)
    clicked_at = s["date"].to_numpy().astype("datetime64[s]") + seconds.astype("timedelta64[s]")
    search = np.isin(s["_channel"].to_numpy(), ["search", "shopping"])
    keywords = ctx.frames["Keyword"] if ctx.has("Keyword") else pd.DataFrame({"id": [], "ad_group_id": []})
    keyword = d._pick_within(rng, s["_ad_group_id"].to_numpy(), keywords["ad_group_id"].to_numpy(),
                             keywords["id"].to_numpy())
    invalid = rng.random(n) < 0.03
    cpc = s["cost"].to_numpy() / np.maximum(s["clicks"].to_numpy(), 1)
    order = np.lexsort((row, clicked_at))       # the log is in time order
    frame = pd.DataFrame({
        "ad_id": s["ad_id"].to_numpy(), "keyword_id": pd.Series(keyword).where(search & (keyword > 0)).astype("Int64"),
        "placement_id": s["placement_id"].to_numpy(), "device_id": s["device_id"].to_numpy(),
        "geo_id": s["geo_id"].to_numpy(), "clicked_at": clicked_at,
        "cost": np.where(invalid, 0.0, np.round(cpc, 6)), "is_invalid": invalid,
        "_cvr": s["_cvr"].to_numpy(), "_account_id": s["_account_id"].to_numpy(),
        "_industry": s["_industry"].to_numpy(),
    }).iloc[order].reset_index(drop=True)
    frame.insert(0, "id", ctx.ids("Click", n))
    return frame


def _hour_profile() -> np.ndarray:
    hours = np.arange(24)
    shape = 0.25 + np.exp(-((hours - 13) ** 2) / 30) + 0.5 * np.exp(-((hours - 20) ** 2) / 8)
    return shape / shape.sum()


def _conversion_lag_days(rng, n: int) -> np.ndarray:
    """Same day for about 40%, then a geometric tail: most within a week, some weeks later."""
    return np.where(rng.random(n) < 0.4, 0, rng.geometric(0.3, n)).clip(0, 60)


def build_conversion(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, clicks = ctx.rng("Conversion"), ctx.frames["Click"]
    converts = (~clicks["is_invalid"].to_numpy()) & (rng.random(len(clicks)) < np.clip(clicks["_cvr"] * 1.5, 0, 1))
    c = clicks[converts].reset_index(drop=True)
    lag = _conversion_lag_days(rng, len(c))
    at = c["clicked_at"].to_numpy().astype("datetime64[s]") + (lag * 86400 + rng.integers(60, 6 * 3600, len(c))).astype("timedelta64[s]")
    from_clicks = pd.DataFrame({"click_id": c["id"].to_numpy(), "ad_id": c["ad_id"].to_numpy(), "converted_at": at,
                                "_account_id": c["_account_id"].to_numpy(), "_industry": c["_industry"].to_numpy(),
                                "is_view_through": False})
    stats = ctx.frames["DailyStat"]
    display = stats[np.isin(stats["_channel"], ["display", "video"])]
    k = min(len(display), max(1, len(from_clicks) // 8))
    vt = display.iloc[np.sort(rng.choice(len(display), k, replace=False))] if k else display.iloc[:0]
    vt_at = vt["date"].to_numpy().astype("datetime64[s]") + (
        _conversion_lag_days(rng, len(vt)) * 86400 + rng.integers(0, 86400, len(vt))).astype("timedelta64[s]")
    view_through = pd.DataFrame({"click_id": np.full(len(vt), -1), "ad_id": vt["ad_id"].to_numpy(), "converted_at": vt_at,
                                 "_account_id": vt["_account_id"].to_numpy(), "_industry": vt["_industry"].to_numpy(),
                                 "is_view_through": True})
    frame = pd.concat([from_clicks, view_through], ignore_index=True)
    # Censoring: conversions after the last day of data have not happened yet.
    frame = frame[frame["converted_at"] < np.datetime64(END_DATE, "s") + np.timedelta64(86400, "s")]
    frame = frame.sort_values(["converted_at", "ad_id"], kind="stable").reset_index(drop=True)
    actions = ctx.frames["ConversionAction"]
    action = d._pick_within(rng, frame["_account_id"].to_numpy(), actions["account_id"].to_numpy(), actions["id"].to_numpy())
    aov = np.vectorize(d._AOV_BY_INDUSTRY.get)(frame["_industry"].to_numpy())
    frame = frame.assign(
        id=ctx.ids("Conversion", len(frame)),
        click_id=frame["click_id"].where(frame["click_id"] > 0).astype("Int64"),
        conversion_action_id=np.where(action > 0, action, actions["id"].to_numpy()[0]),
        value=np.round(aov * rng.lognormal(0, 0.5, len(frame)), 2))
    return frame


def build_invoice(ctx: WorldContext, entity) -> pd.DataFrame:
    """One invoice per account and month it spent in, for what the daily stats say it spent."""
    rng, stats = ctx.rng("Invoice"), ctx.frames["DailyStat"]
    month = stats["date"].to_numpy().astype("datetime64[M]")
    spent = pd.DataFrame({"account_id": stats["_account_id"].to_numpy(), "month": month, "cost": stats["cost"].to_numpy()})
    bills = spent.groupby(["account_id", "month"], as_index=False)["cost"].sum().sort_values(["month", "account_id"])
    n = len(bills)
    latest = bills["month"].to_numpy() == np.datetime64(END_DATE, "M")
    status = np.where(latest, d._choice(rng, ["draft", "issued"], n, [0.6, 0.4]),
                      d._choice(rng, ["paid", "overdue", "issued"], n, [0.85, 0.08, 0.07]))
    first_of_next = (bills["month"].to_numpy().astype("datetime64[M]") + 1).astype("datetime64[D]")
    issued = first_of_next + rng.integers(0, 3, n).astype("timedelta64[D]")
    paid = issued + rng.integers(5, 40, n).astype("timedelta64[D]")
    return pd.DataFrame({
        "id": ctx.ids("Invoice", n), "account_id": bills["account_id"].to_numpy(),
        "month": bills["month"].to_numpy().astype("datetime64[D]"),
        "amount": np.round(bills["cost"].to_numpy() * rng.uniform(0.98, 1.0, n), 2),   # invalid-traffic credits
        "status": status,
        "issued_on": pd.Series(issued).where(status != "draft"),
        "paid_on": pd.Series(paid).where(status == "paid"),
    })


def build_experiment(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Experiment"), ctx.dim_rows(24)
    campaigns = ctx.frames["Campaign"]
    group_count = ctx.frames["AdGroup"].groupby("campaign_id").size()
    eligible = campaigns[(campaigns["status"] != "archived").to_numpy()
                         & (group_count.reindex(campaigns["id"]).fillna(0).to_numpy() >= 2)]
    pool = eligible if len(eligible) else campaigns
    campaign = rng.choice(pool["id"].to_numpy(), min(n, len(pool)), replace=False)
    n = len(campaign)
    status = d._choice(rng, ["running", "completed", "stopped"], n, [0.4, 0.45, 0.15])
    start = random_dates(rng, n, START_DATE, END_DATE - timedelta(days=30))
    end = start + rng.integers(14, 30, n).astype("timedelta64[D]")
    goal = d._choice(rng, ["ctr", "conversion_rate", "cpa", "roas"], n)
    change = d._choice(rng, ["new headline", "higher bids", "broad match", "new landing page", "video creative"], n)
    return pd.DataFrame({
        "id": ctx.ids("Experiment", n), "campaign_id": campaign,
        "name": [f"Test {i + 1}: {c}" for i, c in enumerate(change)],
        "hypothesis": [f"A {c} improves {g.replace('_', ' ')}" for c, g in zip(change, goal)],
        "goal_metric": goal, "status": status, "start_date": start,
        "end_date": pd.Series(end).where(status != "running"),
    })


def build_experiment_arm(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, experiments, groups = ctx.rng("ExperimentArm"), ctx.frames["Experiment"], ctx.frames["AdGroup"]
    rows = []
    for experiment, campaign in zip(experiments["id"], experiments["campaign_id"]):
        own = groups.loc[groups["campaign_id"] == campaign, "id"].to_numpy()
        arms = min(len(own), int(rng.integers(2, 4))) if len(own) >= 2 else 2
        chosen = rng.choice(own, arms, replace=False) if len(own) >= arms else rng.choice(groups["id"].to_numpy(), arms)
        shares = [0.5] + [round(0.5 / (arms - 1), 4)] * (arms - 1)
        for i, (group, share) in enumerate(zip(chosen, shares)):
            rows.append({"experiment_id": experiment, "ad_group_id": group,
                         "name": "Control" if i == 0 else f"Treatment {chr(64 + i)}",
                         "role": "control" if i == 0 else "treatment", "traffic_share": share})
    frame = pd.DataFrame(rows, columns=["experiment_id", "ad_group_id", "name", "role", "traffic_share"])
    frame.insert(0, "id", ctx.ids("ExperimentArm", len(frame)))
    return frame


def build_label(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Label"), ctx.dim_rows(300)
    pairs = pd.DataFrame({
        "campaign_id": d._choice(rng, ctx.keys("Campaign"), n),
        "text": d._choice(rng, ["brand", "always-on", "q2-push", "holiday", "prospecting", "retargeting", "test",
                                "top-priority"], n),
    }).drop_duplicates().reset_index(drop=True)
    m = len(pairs)
    return pairs.assign(id=ctx.ids("Label", m), color=d._choice(rng, ["red", "orange", "green", "blue", "grey"], m))
