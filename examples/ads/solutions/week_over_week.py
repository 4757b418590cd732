"""
Compare the advertiser's spend per channel in the last 7 days of reporting with the 7
days before, and show the change in percent for each channel.
"""
sql = """
WITH bounds AS (SELECT max(date) AS last_day FROM daily_stat),
spend AS (
    SELECT c.channel,
           sum(CASE WHEN s.date > b.last_day - 7 THEN s.cost ELSE 0 END) AS this_week,
           sum(CASE WHEN s.date <= b.last_day - 7 THEN s.cost ELSE 0 END) AS last_week
    FROM daily_stat s
    CROSS JOIN bounds b
    JOIN ad ON ad.id = s.ad_id
    JOIN ad_group g ON g.id = ad.ad_group_id
    JOIN campaign c ON c.id = g.campaign_id
    JOIN advertiser a ON a.id = c.advertiser_id
    WHERE a.name = ? AND s.date > b.last_day - 14
    GROUP BY c.channel
)
SELECT channel, this_week, last_week,
       CASE WHEN last_week > 0 THEN 100 * (this_week - last_week) / last_week END AS change_pct
FROM spend
ORDER BY channel
"""
result = api.query(sql, [${advertiser}])
