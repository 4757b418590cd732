"""
Show the click-through rate of the advertiser's campaigns on ${device_type} devices only over the last
${days} days of reporting, with impressions and clicks, best rate first.
"""
sql = """
SELECT c.name AS campaign, sum(s.impressions) AS impressions, sum(s.clicks) AS clicks,
       sum(s.clicks) / sum(s.impressions) AS ctr
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
JOIN device d ON d.id = s.device_id
WHERE a.name = ? AND d.device_type = ? AND s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY c.id, c.name
HAVING sum(s.impressions) > 0
ORDER BY ctr DESC, campaign
"""
result = api.query(sql, [${advertiser}, ${device_type}])
