"""
For the advertiser over the last ${days} days of reporting, show spend, conversions and
cost per acquisition per device class.
"""
sql = """
SELECT d.device_type, sum(s.cost) AS spend, sum(s.conversions) AS conversions,
       sum(s.cost) / nullif(sum(s.conversions), 0) AS cpa
FROM daily_stat s
JOIN device d ON d.id = s.device_id
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
WHERE a.name = ? AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY d.device_type
ORDER BY d.device_type
"""
result = api.query(sql, [${advertiser}])
