"""Clicks of the campaigns called ${advertiser}, and one misspelt column."""
result = api.query(
    """
    SELECT s.day, s.clicks, s.impresions
    FROM daily_stat s
    WHERE s.campaign_id IN (SELECT id FROM campaign WHERE name = ?)
    """,
    [${advertiser}],
).head(${n})
