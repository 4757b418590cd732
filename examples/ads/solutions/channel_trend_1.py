"""
Show daily impressions and clicks of ${channel} campaigns over the last ${weeks} weeks
of reporting.
"""
sql = """
SELECT s.date, sum(s.impressions) AS impressions, sum(s.clicks) AS clicks
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN ad_group g ON g.id = ad.ad_group_id
JOIN campaign c ON c.id = g.campaign_id
WHERE c.channel = ? AND s.date > (SELECT max(date) FROM daily_stat) - 7 * ${weeks}
GROUP BY s.date
ORDER BY s.date
"""
result = api.query(sql, [${channel}])
