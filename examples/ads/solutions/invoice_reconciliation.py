"""
Reconcile billing for the advertiser over the last ${months} invoiced months: for each
account and month, put the invoiced amount next to the spend reported for that month
and show the difference.
"""
invoices = api.table("invoice", ["account_id", "month", "amount"])
accounts = api.query(
    "SELECT acc.id AS account_id, acc.name AS account FROM account acc "
    "JOIN advertiser a ON a.id = acc.advertiser_id WHERE a.name = ?",
    [${advertiser}],
)
spend = api.query(
    """
    SELECT c.account_id, date_trunc('month', s.date) AS month, sum(s.cost) AS spend
    FROM daily_stat s
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    GROUP BY c.account_id, date_trunc('month', s.date)
    """
)
invoices["month"] = pd.to_datetime(invoices["month"])
spend["month"] = pd.to_datetime(spend["month"])
recent = sorted(invoices["month"].unique())[-${months}:]
billed = accounts.merge(invoices[invoices["month"].isin(recent)], on="account_id")
merged = billed.merge(spend, on=["account_id", "month"], how="left").fillna({"spend": 0.0})
merged["difference"] = merged["amount"] - merged["spend"]
result = (
    merged.rename(columns={"amount": "invoiced"})[["account", "month", "invoiced", "spend", "difference"]]
    .sort_values(["account", "month"]).reset_index(drop=True)
)
