"""
Find wasted spend: ad groups that paid for clicks in the last ${days} days but earned no
conversions at all, and list the ${n} most expensive with their campaign, clicks and
spend.
"""
sql = """
SELECT c.name AS campaign, g.name AS ad_group,
       sum(s.clicks) AS clicks, sum(s.cost) AS spend
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY g.id, g.name, c.name
HAVING sum(s.clicks) > 0 AND sum(s.conversions) = 0
ORDER BY spend DESC, campaign, ad_group
LIMIT ${n}
"""
result = api.query(sql)
