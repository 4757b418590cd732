"""What the ads world looks like: one builder per known dimension entity.

The fact entities' builders are in ``runtime.world.ads_facts`` (they read the helpers
here); ``runtime.world.ads_builders`` lists both in build order. Builders return frames under LOGICAL names (``id``, ``<ref>_id``, field names) and
may carry private helper columns starting with ``_`` (weights, serving windows)
that later builders read. The shape the tests and ``profile`` check comes from
here: heavy-tailed spend (Pareto advertiser weights), CTR mostly 0.5%-5%, weekday
seasonality, paused and archived objects, experiments with control and treatment
arms, conversions days after their clicks, NULLs where real data has them.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd

from runtime.world.context import DAYS, END_DATE, START_DATE, WorldContext, random_dates

__all__ = [
    "DAILY_STAT_ROWS", "CLICK_SAMPLE_RATE", "WEEKDAY_FACTOR", "build_agency", "build_advertiser", "build_account",
    "build_budget", "build_bid_strategy", "build_campaign", "build_ad_group", "build_creative", "build_ad",
    "build_keyword", "build_audience", "build_ad_group_audience", "build_publisher", "build_site", "build_placement",
    "build_device", "build_geo", "build_conversion_action",
]

DAILY_STAT_ROWS = 30_000           # daily stat rows at scale 1
CLICK_SAMPLE_RATE = 0.1            # the click log keeps one click in ten
WEEKDAY_FACTOR = np.array([1.06, 1.09, 1.08, 1.04, 0.96, 0.80, 0.84])   # Monday first

_INDUSTRIES = ["retail", "travel", "finance", "automotive", "technology", "health", "gaming", "education"]
_INDUSTRY_SHARE = [0.24, 0.12, 0.12, 0.08, 0.16, 0.10, 0.10, 0.08]
_CPC_BY_INDUSTRY = dict(zip(_INDUSTRIES, [0.9, 1.1, 3.2, 1.8, 2.0, 1.6, 0.6, 1.9]))
_AOV_BY_INDUSTRY = dict(zip(_INDUSTRIES, [65, 320, 150, 480, 120, 85, 18, 210]))
_COUNTRIES = np.array(["US", "GB", "DE", "FR", "CA", "AU", "JP", "BR", "IN", "ES"], dtype=object)
_COUNTRY_SHARE = [0.38, 0.12, 0.1, 0.08, 0.07, 0.05, 0.06, 0.05, 0.05, 0.04]
_BRAND_A = ["North", "Blue", "Bright", "Summit", "Urban", "Silver", "Green", "Red", "Peak", "Nova", "Atlas",
            "Lumen", "Harbor", "Cedar", "Orbit", "Vivid", "Prime", "Coral", "Iron", "Maple"]
_BRAND_B = ["Outfitters", "Travel", "Bank", "Motors", "Labs", "Health", "Games", "Academy", "Foods", "Home",
            "Apparel", "Airlines", "Insurance", "Electronics", "Pharma"]
_GEOS = [("US", "California", "tier1"), ("US", "Texas", "tier1"), ("US", "New York", "tier1"),
         ("US", "Florida", "tier1"), ("US", "Illinois", "tier1"), ("US", "Ohio", "tier2"),
         ("US", "Georgia", "tier2"), ("US", "Washington", "tier1"), ("GB", "England", "tier1"),
         ("GB", "Scotland", "tier2"), ("DE", "Bavaria", "tier1"), ("DE", "Berlin", "tier1"),
         ("FR", "Ile-de-France", "tier1"), ("FR", "Occitanie", "tier2"), ("CA", "Ontario", "tier1"),
         ("CA", "Quebec", "tier2"), ("AU", "New South Wales", "tier1"), ("JP", "Tokyo", "tier1"),
         ("BR", "Sao Paulo", "tier2"), ("IN", "Maharashtra", "tier3"), ("IN", "Karnataka", "tier3"),
         ("ES", "Madrid", "tier2"), ("MX", "Jalisco", "tier3"), ("NL", "North Holland", "tier2")]
_DEVICES = [("desktop", "windows"), ("desktop", "macos"), ("desktop", "linux"), ("mobile", "ios"),
            ("mobile", "android"), ("mobile", "other"), ("tablet", "ios"), ("tablet", "android"),
            ("connected_tv", "android"), ("connected_tv", "other"), ("desktop", "other"), ("tablet", "other")]
_DEVICE_SHARE = np.array([0.2, 0.1, 0.01, 0.22, 0.3, 0.01, 0.05, 0.04, 0.03, 0.02, 0.01, 0.01])
_KEYWORD_WORDS = ["cheap", "best", "buy", "online", "near me", "deals", "flights", "shoes", "insurance", "loans",
                  "laptop", "hotel", "car", "course", "vitamins", "game", "sale", "review", "price", "free shipping"]


def _choice(rng, values, n, p=None) -> np.ndarray:
    return rng.choice(np.array(values, dtype=object), n, p=p)


def _nullable(values, rng, share: float, dtype=None) -> pd.Series:
    series = pd.Series(values, dtype=dtype)
    return series.where(rng.random(len(series)) >= share)


def _pick_within(rng, child_groups: np.ndarray, parent_of_item: np.ndarray, items: np.ndarray) -> np.ndarray:
    """For each child, a random item of its group (-1 when the group has none). Vectorised."""
    order = np.argsort(parent_of_item, kind="stable")
    sorted_parents, sorted_items = parent_of_item[order], items[order]
    start = np.searchsorted(sorted_parents, child_groups, side="left")
    count = np.searchsorted(sorted_parents, child_groups, side="right") - start
    pick = start + np.floor(rng.random(len(child_groups)) * np.maximum(count, 1)).astype(np.int64)
    return np.where(count > 0, sorted_items[np.minimum(pick, len(sorted_items) - 1)] if len(items) else -1, -1)


def _lookup(frame: pd.DataFrame, keys, column: str) -> np.ndarray:
    return frame.set_index("id")[column].reindex(keys).to_numpy()


# ------------------------------------------------------------------ who advertises


def build_agency(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Agency"), ctx.dim_rows(12)
    first = _choice(rng, ["Omni", "Blue Fox", "Signal", "Brightline", "Northstar", "Kite", "Mosaic", "Tandem"], n)
    return pd.DataFrame({
        "id": ctx.ids("Agency", n),
        "name": [f"{a} Media {i + 1}" for i, a in enumerate(first)],
        "country": _choice(rng, _COUNTRIES, n, _COUNTRY_SHARE),
        "tier": _choice(rng, ["holding", "independent", "boutique"], n, [0.3, 0.5, 0.2]),
    })


def build_advertiser(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Advertiser"), ctx.dim_rows(60)
    pairs = [f"{a} {b}" for a in _BRAND_A for b in _BRAND_B]
    names = list(_choice(rng, pairs, min(n, len(pairs)), None)) if n <= len(pairs) else pairs
    names = list(dict.fromkeys(names))
    names += [f"Brand {i}" for i in range(len(names), n)]
    agency = _choice(rng, ctx.keys("Agency"), n) if ctx.has("Agency") else np.full(n, None)
    weight = np.minimum(rng.pareto(1.3, n) + 1.0, 40.0)   # Pareto (min 1): a few advertisers spend most
    return pd.DataFrame({
        "id": ctx.ids("Advertiser", n), "name": names[:n],
        "agency_id": pd.Series(agency).where(rng.random(n) < 0.7),
        "industry": _choice(rng, _INDUSTRIES, n, _INDUSTRY_SHARE),
        "country": _choice(rng, _COUNTRIES, n, _COUNTRY_SHARE),
        "created_on": random_dates(rng, n, START_DATE - timedelta(days=1500), START_DATE - timedelta(days=30)),
        "is_active": rng.random(n) < 0.9,
        "_weight": weight,
    })


def build_account(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, advertisers = ctx.rng("Account"), ctx.frames["Advertiser"]
    n = max(ctx.dim_rows(90), len(advertisers))
    extra = rng.choice(advertisers["id"].to_numpy(), n - len(advertisers),
                       p=(w := advertisers["_weight"].to_numpy()) / w.sum())
    owner = np.concatenate([advertisers["id"].to_numpy(), extra])
    regions = _choice(rng, ["US", "EMEA", "APAC", "LATAM", "Global"], n)
    owner_name = _lookup(advertisers, owner, "name")
    return pd.DataFrame({
        "id": ctx.ids("Account", n), "advertiser_id": owner,
        "name": [f"{o} - {r} {i + 1}" for i, (o, r) in enumerate(zip(owner_name, regions))],
        "currency": _choice(rng, ["USD", "EUR", "GBP"], n, [0.7, 0.2, 0.1]),
        "timezone": _choice(rng, ["America/New_York", "America/Los_Angeles", "Europe/London", "Europe/Berlin",
                                  "Asia/Tokyo"], n),
        "status": _choice(rng, ["active", "suspended", "closed"], n, [0.9, 0.04, 0.06]),
        "created_on": random_dates(rng, n, START_DATE - timedelta(days=900), START_DATE - timedelta(days=10)),
    })


def build_budget(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Budget"), ctx.dim_rows(140)
    period = _choice(rng, ["daily", "monthly", "lifetime"], n, [0.7, 0.2, 0.1])
    base = np.round(rng.lognormal(5.0, 1.0, n), 2)
    amount = np.where(period == "daily", base, np.where(period == "monthly", base * 30, base * 90))
    return pd.DataFrame({
        "id": ctx.ids("Budget", n), "account_id": _choice(rng, ctx.keys("Account"), n),
        "name": [f"Budget {i + 1}" for i in range(n)], "amount": np.round(amount, 2), "period": period,
        "delivery": _choice(rng, ["standard", "accelerated"], n, [0.85, 0.15]),
        "is_shared": rng.random(n) < 0.3,
    })


def build_bid_strategy(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("BidStrategy"), ctx.dim_rows(110)
    kind = _choice(rng, ["manual_cpc", "maximize_clicks", "target_cpa", "target_roas", "maximize_conversions"],
                   n, [0.2, 0.2, 0.25, 0.2, 0.15])
    return pd.DataFrame({
        "id": ctx.ids("BidStrategy", n), "account_id": _choice(rng, ctx.keys("Account"), n),
        "name": [f"{k.replace('_', ' ').title()} {i + 1}" for i, k in enumerate(kind)], "strategy_type": kind,
        "target_cpa": pd.Series(np.round(rng.lognormal(3.3, 0.6, n), 2)).where(kind == "target_cpa"),
        "target_roas": pd.Series(np.round(rng.uniform(1.5, 8.0, n), 2)).where(kind == "target_roas"),
    })


# ------------------------------------------------------------------ what runs


def build_campaign(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Campaign"), ctx.dim_rows(240)
    accounts, advertisers = ctx.frames["Account"], ctx.frames["Advertiser"]
    # Every account runs at least one campaign; big advertisers run more of them.
    account_weight = _lookup(advertisers, accounts["advertiser_id"], "_weight") ** 0.5
    extra = rng.choice(accounts["id"].to_numpy(), max(0, n - len(accounts)), p=account_weight / account_weight.sum())
    account = np.concatenate([accounts["id"].to_numpy(), extra])[:n]
    advertiser = _lookup(accounts, account, "advertiser_id")
    budget = _pick_within(rng, account, ctx.frames["Budget"]["account_id"].to_numpy(), ctx.keys("Budget")) \
        if ctx.has("Budget") else np.full(n, -1)
    strategy = _pick_within(rng, account, ctx.frames["BidStrategy"]["account_id"].to_numpy(),
                            ctx.keys("BidStrategy")) if ctx.has("BidStrategy") else np.full(n, -1)
    objective = _choice(rng, ["awareness", "traffic", "conversions", "app_installs"], n, [0.2, 0.3, 0.4, 0.1])
    channel = _choice(rng, ["search", "display", "video", "shopping"], n, [0.45, 0.25, 0.15, 0.15])
    status = _choice(rng, ["enabled", "paused", "archived"], n, [0.6, 0.25, 0.15])
    start = random_dates(rng, n, START_DATE - timedelta(days=200), END_DATE - timedelta(days=20))
    offset = rng.integers(15, 100, n).astype("timedelta64[D]")
    end_planned = np.where(rng.random(n) < 0.35, start + offset, np.datetime64("NaT"))
    last_day = np.datetime64(END_DATE - timedelta(days=1), "D")
    archived_end = np.minimum(start + offset, last_day)
    end = np.where(status == "archived", archived_end, end_planned).astype("datetime64[D]")
    # A paused campaign stopped serving on some day between its start and today.
    pause = start + (rng.random(n) * (np.datetime64(END_DATE, "D") - start).astype(int)).astype("timedelta64[D]")
    serve_end = np.where(status == "paused", pause, np.where(pd.isna(end), np.datetime64(END_DATE, "D"), end))
    serve_end = np.minimum(serve_end.astype("datetime64[D]"), np.datetime64(END_DATE, "D"))
    daily = np.round(rng.lognormal(4.2, 0.9, n) * (1 + _lookup(advertisers, advertiser, "_weight")) ** 0.5, 2)
    names = _lookup(advertisers, advertiser, "name")
    return pd.DataFrame({
        "id": ctx.ids("Campaign", n), "advertiser_id": advertiser, "account_id": account,
        "budget_id": pd.Series(budget).where((budget > 0) & (rng.random(n) < 0.8)),
        "bid_strategy_id": pd.Series(strategy).where((strategy > 0) & (rng.random(n) < 0.7)),
        "name": [f"{a} | {o.replace('_', ' ')} | {c} #{i + 1}" for i, (a, o, c) in
                 enumerate(zip(names, objective, channel))],
        "objective": objective, "channel": channel, "status": status,
        "daily_budget": pd.Series(daily).where(rng.random(n) >= 0.1),
        "start_date": start, "end_date": end, "is_active": status == "enabled",
        "_serve_start": np.maximum(start, np.datetime64(START_DATE, "D")), "_serve_end": serve_end,
        "_weight": _lookup(advertisers, advertiser, "_weight") * rng.lognormal(0, 0.5, n),
    })


def _child_status(rng, parent_status: np.ndarray) -> np.ndarray:
    own = _choice(rng, ["enabled", "paused", "archived"], len(parent_status), [0.8, 0.15, 0.05])
    return np.where(parent_status == "enabled", own, parent_status)


def build_ad_group(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("AdGroup"), ctx.dim_rows(700)
    campaigns = ctx.frames["Campaign"]
    n = max(n, len(campaigns))
    campaign = np.concatenate([campaigns["id"].to_numpy(), _choice(rng, campaigns["id"].to_numpy(), n - len(campaigns))])
    themes = _choice(rng, ["Brand", "Generic", "Competitor", "Prospecting", "Retargeting", "Seasonal"], n)
    return pd.DataFrame({
        "id": ctx.ids("AdGroup", n), "campaign_id": campaign,
        "name": [f"{t} {i + 1}" for i, t in enumerate(themes)],
        "status": _child_status(rng, _lookup(campaigns, campaign, "status")),
        "default_bid": np.round(rng.lognormal(0.3, 0.5, n), 2),
    })


def build_creative(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Creative"), ctx.dim_rows(900)
    fmt = _choice(rng, ["text", "image", "video", "html5"], n, [0.4, 0.35, 0.15, 0.1])
    sizes = np.array([(300, 250), (728, 90), (160, 600), (320, 50), (1200, 628)])[rng.integers(0, 5, n)]
    visual = fmt != "text"
    return pd.DataFrame({
        "id": ctx.ids("Creative", n), "advertiser_id": _choice(rng, ctx.keys("Advertiser"), n),
        "name": [f"{f.title()} creative {i + 1}" for i, f in enumerate(fmt)], "format": fmt,
        "width": pd.Series(sizes[:, 0]).where(visual).astype("Int64"),
        "height": pd.Series(sizes[:, 1]).where(visual).astype("Int64"),
        "duration_s": pd.Series(_choice(rng, [6, 15, 30, 60], n)).where(fmt == "video").astype("Int64"),
        "created_on": random_dates(rng, n, START_DATE - timedelta(days=365), END_DATE - timedelta(days=5)),
    })


def build_ad(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, groups = ctx.rng("Ad"), ctx.frames["AdGroup"]
    n = max(ctx.dim_rows(1600), len(groups))
    group = np.concatenate([groups["id"].to_numpy(), _choice(rng, groups["id"].to_numpy(), n - len(groups))])
    campaign = _lookup(groups, group, "campaign_id")
    advertiser = _lookup(ctx.frames["Campaign"], campaign, "advertiser_id")
    creatives = ctx.frames["Creative"]
    creative = _pick_within(rng, advertiser, creatives["advertiser_id"].to_numpy(), creatives["id"].to_numpy())
    creative = np.where(creative > 0, creative, _choice(rng, creatives["id"].to_numpy(), n))
    brand = [str(b).lower().replace(" ", "") for b in _lookup(ctx.frames["Advertiser"], advertiser, "name")]
    words = _choice(rng, ["Save big", "New arrivals", "Book now", "Free trial", "Limited offer", "Shop the sale"], n)
    return pd.DataFrame({
        "id": ctx.ids("Ad", n), "ad_group_id": group, "creative_id": creative,
        "headline": [f"{w} - ad {i + 1}" for i, w in enumerate(words)],
        "final_url": [f"https://www.{b}.com/lp/{i + 1}" for i, b in enumerate(brand)],
        "status": _child_status(rng, _lookup(groups, group, "status")),
        "approval": _choice(rng, ["approved", "limited", "disapproved"], n, [0.9, 0.07, 0.03]),
    })


def build_keyword(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Keyword"), ctx.dim_rows(3500)
    groups = ctx.frames["AdGroup"]
    channel = _lookup(ctx.frames["Campaign"], groups["campaign_id"], "channel")
    search_groups = groups["id"].to_numpy()[np.isin(channel, ["search", "shopping"])]
    search_groups = search_groups if len(search_groups) else groups["id"].to_numpy()
    group = _choice(rng, search_groups, n)
    a, b = _choice(rng, _KEYWORD_WORDS, n), _choice(rng, _KEYWORD_WORDS, n)
    return pd.DataFrame({
        "id": ctx.ids("Keyword", n), "ad_group_id": group,
        "text": [f"{x} {y}" if x != y else x for x, y in zip(a, b)],
        "match_type": _choice(rng, ["exact", "phrase", "broad"], n, [0.35, 0.35, 0.3]),
        "status": _child_status(rng, _lookup(groups, group, "status")),
        "max_cpc": _nullable(np.round(rng.lognormal(0.4, 0.6, n), 2), rng, 0.6),
        "quality_score": _nullable(np.clip(np.round(rng.normal(6.5, 1.8, n)), 1, 10), rng, 0.15).astype("Int64"),
    })


def build_audience(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Audience"), ctx.dim_rows(120)
    kind = _choice(rng, ["in_market", "affinity", "remarketing", "custom", "lookalike"], n, [0.25, 0.2, 0.25, 0.15, 0.15])
    first_party = np.isin(kind, ["remarketing", "custom", "lookalike"])
    topic = _choice(rng, ["Travel", "Fitness", "Tech", "Finance", "Fashion", "Gamers", "Parents", "Cars"], n)
    return pd.DataFrame({
        "id": ctx.ids("Audience", n),
        "advertiser_id": pd.Series(_choice(rng, ctx.keys("Advertiser"), n)).where(first_party),
        "name": [f"{t} {k.replace('_', ' ')} {i + 1}" for i, (t, k) in enumerate(zip(topic, kind))],
        "audience_type": kind, "size": np.round(rng.lognormal(11, 1.5, n)).astype(np.int64),
    })


def build_ad_group_audience(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("AdGroupAudience"), ctx.dim_rows(1000)
    pairs = pd.DataFrame({"ad_group_id": _choice(rng, ctx.keys("AdGroup"), n),
                          "audience_id": _choice(rng, ctx.keys("Audience"), n)}).drop_duplicates()
    m = len(pairs)
    mode = _choice(rng, ["targeting", "observation", "exclusion"], m, [0.5, 0.4, 0.1])
    return pairs.reset_index(drop=True).assign(
        id=ctx.ids("AdGroupAudience", m), mode=mode,
        bid_modifier=np.where(mode == "exclusion", 0.0, np.round(rng.uniform(0.7, 1.6, m), 2)))


# ------------------------------------------------------------------ where it runs


def build_publisher(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Publisher"), ctx.dim_rows(40)
    return pd.DataFrame({
        "id": ctx.ids("Publisher", n), "name": [f"Publisher {i + 1}" for i in range(n)],
        "network": _choice(rng, ["search", "display", "video", "app"], n, [0.1, 0.5, 0.2, 0.2]),
        "revenue_share": np.round(rng.uniform(0.5, 0.8, n), 3),
    })


def build_site(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Site"), ctx.dim_rows(300)
    site_type = _choice(rng, ["web", "app"], n, [0.7, 0.3])
    category = _choice(rng, ["news", "sports", "entertainment", "shopping", "travel", "finance", "games", "lifestyle"], n)
    return pd.DataFrame({
        "id": ctx.ids("Site", n), "publisher_id": _choice(rng, ctx.keys("Publisher"), n),
        "domain": [f"{c}{i + 1}.example.com" if t == "web" else f"com.{c}.app{i + 1}"
                   for i, (c, t) in enumerate(zip(category, site_type))],
        "site_type": site_type, "category": category, "is_brand_safe": rng.random(n) < 0.92,
    })


def build_placement(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, n = ctx.rng("Placement"), ctx.dim_rows(800)
    fmt = _choice(rng, ["banner", "native", "video", "interstitial"], n, [0.45, 0.25, 0.2, 0.1])
    return pd.DataFrame({
        "id": ctx.ids("Placement", n), "site_id": _choice(rng, ctx.keys("Site"), n),
        "name": [f"{f} slot {i + 1}" for i, f in enumerate(fmt)], "format": fmt,
        "position": _choice(rng, ["above_fold", "below_fold", "sidebar", "in_feed"], n),
        "_weight": rng.pareto(1.5, n) + 0.1,
    })


def build_device(ctx: WorldContext, entity) -> pd.DataFrame:
    return pd.DataFrame({"id": ctx.ids("Device", len(_DEVICES)),
                         "device_type": [d for d, _ in _DEVICES], "os": [o for _, o in _DEVICES],
                         "_weight": _DEVICE_SHARE / _DEVICE_SHARE.sum()})


def build_geo(ctx: WorldContext, entity) -> pd.DataFrame:
    tier_weight = {"tier1": 3.0, "tier2": 1.5, "tier3": 0.8}
    weight = np.array([tier_weight[t] for _, _, t in _GEOS])
    return pd.DataFrame({"id": ctx.ids("Geo", len(_GEOS)), "country": [c for c, _, _ in _GEOS],
                         "region": [r for _, r, _ in _GEOS], "market_tier": [t for _, _, t in _GEOS],
                         "_weight": weight / weight.sum()})


# ------------------------------------------------------------------ what it earned


def build_conversion_action(ctx: WorldContext, entity) -> pd.DataFrame:
    rng, accounts = ctx.rng("ConversionAction"), ctx.keys("Account")
    n = max(ctx.dim_rows(200), len(accounts))
    account = np.concatenate([accounts, _choice(rng, accounts, n - len(accounts))])
    category = _choice(rng, ["purchase", "lead", "signup", "app_install", "page_view"], n, [0.4, 0.2, 0.15, 0.15, 0.1])
    return pd.DataFrame({
        "id": ctx.ids("ConversionAction", n), "account_id": account,
        "name": [f"{c.replace('_', ' ').title()} {i + 1}" for i, c in enumerate(category)], "category": category,
        "counting": np.where(category == "purchase", "every", "one"),
        "default_value": _nullable(np.round(rng.lognormal(3, 1, n), 2), rng, 0.4),
        "attribution_window_days": _choice(rng, [7, 14, 30, 90], n, [0.1, 0.2, 0.6, 0.1]).astype(np.int64),
    })
