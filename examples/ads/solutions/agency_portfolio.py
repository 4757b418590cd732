"""
Summarise the portfolios of ${tier} agencies: for each agency, how many active
advertisers it manages and what they spent over the last ${days} days, biggest first.
"""
advertisers = api.query(
    """
    SELECT ag.name AS agency, a.id AS advertiser_id
    FROM advertiser a JOIN agency ag ON ag.id = a.agency_id
    WHERE ag.tier = ? AND a.is_active
    """,
    [${tier}],
)
spend = api.query(
    """
    SELECT c.advertiser_id, sum(s.cost) AS spend
    FROM daily_stat s
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
    GROUP BY c.advertiser_id
    """
)
portfolio = advertisers.merge(spend, on="advertiser_id", how="left").fillna({"spend": 0.0})
result = (
    portfolio.groupby("agency", as_index=False)
    .agg(advertisers=("advertiser_id", "nunique"), spend=("spend", "sum"))
    .sort_values(["spend", "agency"], ascending=[False, True])
    .reset_index(drop=True)
)
