"""
Look for weekday patterns in ${channel} campaigns over the last ${days} days: for each
day of the week (Monday first), total clicks, click-through rate and average cost per
click.
"""
daily = api.query(
    """
    SELECT s.date, s.impressions, s.clicks, s.cost
    FROM daily_stat s
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    WHERE c.channel = ? AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
    """,
    [${channel}],
)
daily["weekday_number"] = pd.to_datetime(daily["date"]).dt.day_of_week + 1
daily["weekday"] = pd.to_datetime(daily["date"]).dt.day_name()
week = daily.groupby(["weekday_number", "weekday"], as_index=False)[["impressions", "clicks", "cost"]].sum()
week["ctr"] = week["clicks"] / week["impressions"]
week["cpc"] = week["cost"] / week["clicks"]
result = week.sort_values("weekday_number")[["weekday", "clicks", "ctr", "cpc"]].reset_index(drop=True)
