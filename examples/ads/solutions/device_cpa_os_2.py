"""
For the advertiser over the last ${days} days of reporting, split spend, conversions
and cost per acquisition by device class and operating system.
"""
rows = api.query(
    """
    SELECT d.device_type, d.os, s.cost, s.conversions
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
split = rows.groupby(["device_type", "os"], as_index=False)[["cost", "conversions"]].sum()
split["cpa"] = split["cost"] / split["conversions"].where(split["conversions"] > 0)
result = split.rename(columns={"cost": "spend"}).sort_values(["device_type", "os"]).reset_index(drop=True)
