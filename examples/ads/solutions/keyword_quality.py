"""
Find ${industry} advertisers' enabled keywords whose quality score is ${max_score} or lower and
that still received clicks in the last ${days} days; show each keyword's match type,
quality score, logged clicks and their cost, most expensive first.
"""
sql = """
SELECT k.text AS keyword, k.match_type, k.quality_score,
       count(*) AS clicks, sum(cl.cost) AS spend
FROM click cl
JOIN keyword k ON k.id = cl.keyword_id
JOIN ad_group g ON g.id = k.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
WHERE a.industry = ?
  AND k.status = 'enabled'
  AND k.quality_score <= ${max_score}
  AND cl.clicked_at > (SELECT max(clicked_at) FROM click) - INTERVAL (${days}) DAY
GROUP BY k.id, k.text, k.match_type, k.quality_score
ORDER BY spend DESC, keyword, k.id
"""
result = api.query(sql, [${industry}])
