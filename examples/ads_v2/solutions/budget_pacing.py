"""
Check budget pacing for the advertiser's enabled campaigns that draw on a daily
budget: compare what each spent over the last ${days} days with its daily budget
amount times ${days} days, and list them from the most over-paced to the most
under-paced.
"""
campaigns = api.query(
    """
    SELECT c.id, c.name AS campaign, b.amount AS daily_budget
    FROM campaign c
    JOIN advertiser a ON a.id = c.advertiser_id
    JOIN budget b ON b.id = c.budget_id
    WHERE a.name = ? AND c.status = 'enabled' AND b.period = 'daily'
    """,
    [${advertiser}],
)
spend = api.query(
    """
    SELECT g.campaign_id AS id, sum(s.cost) AS spend
    FROM daily_stat s
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
    GROUP BY g.campaign_id
    """
)
pacing = campaigns.merge(spend, on="id", how="left").fillna({"spend": 0.0})
pacing["budget"] = pacing["daily_budget"] * ${days}
pacing["pacing"] = pacing["spend"] / pacing["budget"]
result = (
    pacing[["campaign", "spend", "budget", "pacing"]]
    .sort_values(["pacing", "campaign"], ascending=[False, True])
    .reset_index(drop=True)
)
