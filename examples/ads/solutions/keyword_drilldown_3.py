"""
Keep the top ${n} of ${industry} advertisers' ${match_type}-match keywords by logged clicks over
the last ${days} days, and add how many conversions those clicks led to and the
conversion rate.
"""
clicks = api.query(
    """
    SELECT k.id AS keyword_id, k.text AS keyword, k.match_type, cl.id AS click_id, cl.cost
    FROM click cl
    JOIN keyword k ON k.id = cl.keyword_id
    JOIN ad_group g ON g.id = k.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    JOIN advertiser a ON a.id = c.advertiser_id
    WHERE a.industry = ? AND k.match_type = ?
      AND cl.clicked_at > (SELECT max(clicked_at) FROM click) - INTERVAL (${days}) DAY
    """,
    [${industry}, ${match_type}],
)
converted = api.query("SELECT click_id, count(*) AS conversions FROM conversion WHERE click_id IS NOT NULL GROUP BY click_id")
clicks = clicks.merge(converted, on="click_id", how="left").fillna({"conversions": 0})
top = (
    clicks.groupby(["keyword_id", "keyword", "match_type"], as_index=False)
    .agg(clicks=("click_id", "size"), cost=("cost", "sum"), conversions=("conversions", "sum"))
    .sort_values(["clicks", "cost", "keyword"], ascending=[False, False, True])
    .head(${n})
)
top["conversion_rate"] = top["conversions"] / top["clicks"]
result = top.drop(columns="keyword_id").reset_index(drop=True)
