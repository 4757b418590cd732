"""
For the advertiser's campaigns over the last ${days} days, compare device classes:
spend, conversions and cost per acquisition, leaving out device classes with no
conversions.
"""
stats = api.query(
    """
    SELECT d.device_type, s.cost, s.conversions
    FROM daily_stat s
    JOIN device d ON d.id = s.device_id
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    JOIN advertiser a ON a.id = c.advertiser_id
    WHERE a.name = ? AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
    """,
    [${advertiser}],
)
by_device = stats.groupby("device_type", as_index=False)[["cost", "conversions"]].sum()
by_device = by_device[by_device["conversions"] > 0]
by_device["cpa"] = by_device["cost"] / by_device["conversions"]
result = by_device.rename(columns={"cost": "spend"}).sort_values("cpa").reset_index(drop=True)
