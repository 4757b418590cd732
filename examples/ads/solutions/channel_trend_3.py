"""
Show weekly impressions and clicks of ${channel} campaigns over the last ${weeks} weeks
of reporting, counting only traffic from ${tier} markets.
"""
sql = """
WITH bounds AS (SELECT max(date) AS last_day FROM daily_stat)
SELECT ${weeks} - CAST(floor((b.last_day - s.date) / 7) AS INTEGER) AS week,
       sum(s.impressions) AS impressions, sum(s.clicks) AS clicks
FROM daily_stat s
CROSS JOIN bounds b
JOIN geo ON geo.id = s.geo_id
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
WHERE c.channel = ? AND geo.market_tier = ? AND s.date > b.last_day - 7 * ${weeks}
GROUP BY 1
ORDER BY 1
"""
result = api.query(sql, [${channel}, ${tier}])
