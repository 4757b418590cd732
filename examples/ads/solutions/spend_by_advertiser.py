"""
Add up the spend of every advertiser over the last ${days} days of reporting and list
the ${n} biggest spenders with their industry, largest first.
"""
sql = """
SELECT a.name AS advertiser, a.industry, sum(s.cost) AS spend
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY a.id, a.name, a.industry
ORDER BY spend DESC, advertiser
LIMIT ${n}
"""
result = api.query(sql)
