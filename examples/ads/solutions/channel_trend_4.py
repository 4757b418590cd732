"""
For ${channel} campaigns in ${tier} markets over the last ${weeks} weeks of reporting,
add each week's change in clicks against the week before, in percent.
"""
weekly = api.query(
    """
    WITH bounds AS (SELECT max(date) AS last_day FROM daily_stat)
    SELECT ${weeks} - CAST(floor((b.last_day - s.date) / 7) AS INTEGER) AS week,
           sum(s.impressions) AS impressions, sum(s.clicks) AS clicks
    FROM daily_stat s
    CROSS JOIN bounds b
    JOIN geo ON geo.id = s.geo_id
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    WHERE c.channel = ? AND geo.market_tier = ? AND s.date > b.last_day - 7 * ${weeks}
    GROUP BY 1
    """,
    [${channel}, ${tier}],
).sort_values("week").reset_index(drop=True)
previous = weekly["clicks"].shift(1)
weekly["clicks_change_pct"] = 100 * (weekly["clicks"] - previous) / previous.where(previous > 0)
result = weekly
