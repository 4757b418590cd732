"""
Compute return on ad spend per market tier over the last ${days} days of reporting,
counting only traffic from ${device_type} devices.
"""
sql = """
SELECT geo.market_tier, sum(s.cost) AS spend, sum(s.conversion_value) / sum(s.cost) AS roas
FROM daily_stat s
JOIN geo ON geo.id = s.geo_id
JOIN device d ON d.id = s.device_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days} AND d.device_type = ?
GROUP BY geo.market_tier
HAVING sum(s.cost) > 0
ORDER BY geo.market_tier
"""
result = api.query(sql, [${device_type}])
