"""
Rank ${industry} advertisers' keywords by logged clicks over the last ${days} days and keep the
top ${n}, with their match type and the cost of those clicks.
"""
sql = """
SELECT k.text AS keyword, k.match_type, count(*) AS clicks, sum(cl.cost) AS cost
FROM click cl
JOIN keyword k ON k.id = cl.keyword_id
JOIN ad_group g ON g.id = k.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
WHERE a.industry = ? AND cl.clicked_at > (SELECT max(clicked_at) FROM click) - INTERVAL (${days}) DAY
GROUP BY k.id, k.text, k.match_type
ORDER BY clicks DESC, cost DESC, keyword, k.match_type
LIMIT ${n}
"""
result = api.query(sql, [${industry}])
