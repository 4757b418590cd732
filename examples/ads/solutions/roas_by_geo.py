"""
For ${channel} campaigns over the last ${days} days, compute return on ad spend per
country (conversion value per dollar spent) and rank the countries from best to worst,
keeping only countries that spent something.
"""
sql = """
SELECT geo.country,
       sum(s.cost) AS spend,
       sum(s.conversion_value) AS conversion_value,
       sum(s.conversion_value) / sum(s.cost) AS roas
FROM daily_stat s
JOIN geo ON geo.id = s.geo_id
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
WHERE c.channel = ?
  AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY geo.country
HAVING sum(s.cost) > 0
ORDER BY roas DESC, geo.country
"""
result = api.query(sql, [${channel}])
