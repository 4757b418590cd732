"""
Break the click-through rate of the advertiser's campaigns on ${device_type} devices over the last
${days} days of reporting down by ad group, with impressions and clicks, best rate
first.
"""
rows = api.query(
    """
    SELECT c.name AS campaign, g.id AS ad_group_id, g.name AS ad_group,
           s.impressions, s.clicks
    FROM daily_stat s
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    JOIN advertiser a ON a.id = c.advertiser_id
    JOIN device d ON d.id = s.device_id
    WHERE a.name = ? AND d.device_type = ? AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
    """,
    [${advertiser}, ${device_type}],
)
groups = rows.groupby(["campaign", "ad_group_id", "ad_group"], as_index=False)[["impressions", "clicks"]].sum()
groups = groups[groups["impressions"] > 0]
groups["ctr"] = groups["clicks"] / groups["impressions"]
result = (
    groups.sort_values(["ctr", "campaign", "ad_group"], ascending=[False, True, True])
    [["campaign", "ad_group", "impressions", "clicks", "ctr"]].reset_index(drop=True)
)
