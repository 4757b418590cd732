"""
Split the spend of ${industry} advertisers over the last ${days} days of reporting by
advertiser and by week (weeks starting on Monday).
"""
rows = api.query(
    """
    SELECT a.name AS advertiser, s.date, s.cost
    FROM daily_stat s
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    JOIN advertiser a ON a.id = c.advertiser_id
    WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
      AND a.industry = ?
    """,
    [${industry}],
)
rows["date"] = pd.to_datetime(rows["date"])
rows["week"] = rows["date"] - pd.to_timedelta(rows["date"].dt.day_of_week, unit="D")
weekly = rows.groupby(["advertiser", "week"], as_index=False)["cost"].sum()
result = weekly.rename(columns={"cost": "spend"}).sort_values(["advertiser", "week"]).reset_index(drop=True)
