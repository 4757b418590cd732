"""
Compare bidding strategies for ${objective} campaigns over the last ${days} days: per
strategy type (manual bidding when a campaign has none), spend, conversions, cost per
acquisition and return on ad spend.
"""
sql = """
SELECT coalesce(b.strategy_type, 'manual_cpc') AS strategy_type,
       sum(s.cost) AS spend,
       sum(s.conversions) AS conversions,
       sum(s.cost) / nullif(sum(s.conversions), 0) AS cpa,
       sum(s.conversion_value) / nullif(sum(s.cost), 0) AS roas
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
LEFT JOIN bid_strategy b ON b.id = c.bid_strategy_id
WHERE c.objective = ?
  AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY 1
ORDER BY strategy_type
"""
result = api.query(sql, [${objective}])
