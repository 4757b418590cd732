"""
Add up each advertiser's spend over the last ${days} days of reporting, largest first.
"""
sql = """
SELECT a.name AS advertiser, sum(s.cost) AS spend
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY a.id, a.name
ORDER BY spend DESC, advertiser
"""
result = api.query(sql)
