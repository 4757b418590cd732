"""
Over the last ${months} invoiced months, keep only the advertiser's invoices that are
not paid yet, and per month show their amount, the spend reported for that month and
the difference.
"""
invoiced = api.query(
    """
    WITH recent AS (SELECT DISTINCT month FROM invoice ORDER BY month DESC LIMIT ${months})
    SELECT i.month, sum(i.amount) AS invoiced
    FROM invoice i
    JOIN account acc ON acc.id = i.account_id
    JOIN advertiser a ON a.id = acc.advertiser_id
    WHERE a.name = ? AND i.month IN (SELECT month FROM recent) AND i.status <> 'paid'
    GROUP BY i.month
    """,
    [${advertiser}],
)
spend = api.query(
    """
    SELECT date_trunc('month', s.date) AS month, sum(s.cost) AS spend
    FROM daily_stat s
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    JOIN advertiser a ON a.id = c.advertiser_id
    WHERE a.name = ?
    GROUP BY 1
    """,
    [${advertiser}],
)
invoiced["month"] = pd.to_datetime(invoiced["month"])
spend["month"] = pd.to_datetime(spend["month"])
monthly = invoiced.merge(spend, on="month", how="left").fillna({"spend": 0.0})
monthly["difference"] = monthly["invoiced"] - monthly["spend"]
result = monthly.sort_values("month").reset_index(drop=True)
