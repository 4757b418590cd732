"""Wrong versions of the reference solutions, written as data.

Each entry maps a solution file (its stem) to a list of ``(find, replace)`` edits on the
solution *template*; every edit is a mistake an analyst (or a model) plausibly makes: a
wrong or inverted filter, a wrong metric, a wrong time window, a constraint from an
earlier turn forgotten. The expectations must reject each one.
"""

PERTURBATIONS: dict[str, list[tuple[str, str]]] = {
    # ------------------------------------------------ single-turn workflows
    "top_ctr_campaigns": [
        ("ORDER BY ctr DESC", "ORDER BY clicks DESC"),                 # wrong metric
        ("- ${days}", "- 2 * ${days}"),                                # wrong window
    ],
    "spend_by_advertiser": [("- ${days}", "- ${days} - 7")],
    "cpa_by_device": [("WHERE a.name = ?", "WHERE a.name <> ?")],
    "roas_by_geo": [("WHERE c.channel = ?", "WHERE c.channel <> ?")],
    "budget_pacing": [('pacing["daily_budget"] * ${days}', 'pacing["daily_budget"] * (${days} + 1)')],
    "experiment_lift": [("- 1 AS lift", "AS lift")],
    "conversion_lag": [("WHERE act.category = ?", "WHERE act.category <> ?")],
    "keyword_quality": [("WHERE a.industry = ?", "WHERE a.industry <> ?")],
    "placement_performance": [("ORDER BY spend DESC", "ORDER BY ctr DESC")],
    "invoice_reconciliation": [('WHERE a.name = ?"', 'WHERE a.name <> ?"')],
    "wasted_spend": [("sum(s.conversions) = 0", "sum(s.conversions) >= 0")],
    "day_of_week": [('week["cost"] / week["clicks"]', 'week["cost"] / week["impressions"]')],
    "week_over_week": [("WHERE a.name = ?", "WHERE a.name <> ?")],
    "creative_fatigue": [("WHERE cr.format = ?", "WHERE cr.format <> ?")],
    "audience_overlap": [("WHERE au.audience_type = ?", "WHERE au.audience_type <> ?")],
    "invalid_click_rate": [("INTERVAL (${days}) DAY", "INTERVAL (${days} - 14) DAY")],
    "agency_portfolio": [("WHERE ag.tier = ?", "WHERE ag.tier <> ?")],
    "bid_strategy_performance": [("WHERE c.objective = ?", "WHERE c.objective <> ?")],
    "brand_safety_spend": [("WHEN NOT site.is_brand_safe", "WHEN site.is_brand_safe")],
    "unpaid_invoices": [('"status = "', '"status <> "')],
    # ------------------------------------------------ conversations, turn by turn
    "spend_drilldown_1": [("- ${days}", "- ${days} - 7")],
    "spend_drilldown_2": [("AND a.industry = ?", "AND a.industry <> ?")],
    "spend_drilldown_3": [("AND a.industry = ?", "AND a.industry <> ?")],
    "campaign_ctr_drilldown_1": [("- ${days}", "- 2 * ${days}")],
    "campaign_ctr_drilldown_2": [("AND d.device_type = ?", "AND d.device_type <> ?")],
    "campaign_ctr_drilldown_3": [("AND d.device_type = ? AND", "AND ? IS NOT NULL AND")],  # forgot turn 2
    "geo_roas_periods_1": [("- ${days}", "- 2 * ${days}")],
    "geo_roas_periods_2": [("AND d.device_type = ?", "AND d.device_type <> ?")],
    "geo_roas_periods_3": [("WHERE d.device_type = ?", "WHERE d.device_type <> ?")],
    "device_cpa_os_1": [("nullif(sum(s.conversions), 0) AS cpa", "nullif(sum(s.clicks), 0) AS cpa")],
    "device_cpa_os_2": [("WHERE a.name = ?", "WHERE a.name <> ?")],
    "keyword_drilldown_1": [("WHERE a.industry = ?", "WHERE a.industry <> ?")],
    "keyword_drilldown_2": [("AND k.match_type = ?", "AND k.match_type <> ?")],
    "keyword_drilldown_3": [("AND k.match_type = ?", "AND k.match_type <> ?")],  # forgot turn 2
    "experiment_review_1": [("WHERE e.status = ?", "WHERE e.status <> ?")],
    "experiment_review_2": [("WHERE e.status = ?", "WHERE e.status <> ?")],
    "experiment_review_3": [("WHERE e.status = ?", "WHERE e.status <> ?")],
    "placement_safety_1": [("- ${days}", "- 2 * ${days}")],
    "placement_safety_2": [("AND site.is_brand_safe", "AND NOT site.is_brand_safe")],
    "placement_safety_3": [("AND p.format = ?", "AND p.format <> ?")],
    "placement_safety_4": [("AND site.is_brand_safe AND", "AND NOT site.is_brand_safe AND")],
    "invoice_review_1": [("WHERE a.name = ?", "WHERE a.name <> ?")],
    "invoice_review_2": [('monthly["invoiced"] - monthly["spend"]', 'monthly["spend"] - monthly["invoiced"]')],
    "invoice_review_3": [("AND i.status <> 'paid'", "AND i.status = 'paid'")],
    "channel_trend_1": [("WHERE c.channel = ?", "WHERE c.channel <> ?")],
    "channel_trend_2": [("WHERE c.channel = ?", "WHERE c.channel <> ?")],
    "channel_trend_3": [("AND geo.market_tier = ?", "AND geo.market_tier <> ?")],
    "channel_trend_4": [("AND geo.market_tier = ?", "AND geo.market_tier <> ?")],  # forgot turn 3
    "conversion_mix_1": [("INTERVAL (${days}) DAY", "INTERVAL (${days} + 30) DAY")],
    "conversion_mix_2": [("AND NOT conv.is_view_through", "AND conv.is_view_through")],
    "conversion_mix_3": [("AND NOT conv.is_view_through", "AND conv.is_view_through")],
}


def perturb(template: str, edits: list[tuple[str, str]]) -> str:
    """Apply edits to a solution template; an edit that matches nothing is a test bug."""
    for find, replace in edits:
        if find not in template:
            raise AssertionError(f"perturbation {find!r} matches nothing in the solution")
        template = template.replace(find, replace)
    return template
