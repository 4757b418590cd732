"""
Rank the advertiser's campaigns by click-through rate over the last ${days} days of
reporting, counting only campaigns that were shown at least once, and keep the top ${n}.
Show each campaign's impressions, clicks and click-through rate.
"""
sql = """
SELECT c.name AS campaign,
       sum(s.impressions) AS impressions,
       sum(s.clicks) AS clicks,
       sum(s.clicks) / sum(s.impressions) AS ctr
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
WHERE a.name = ?
  AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY c.id, c.name
HAVING sum(s.impressions) > 0
ORDER BY ctr DESC, campaign
LIMIT ${n}
"""
result = api.query(sql, [${advertiser}])
