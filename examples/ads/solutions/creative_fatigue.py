"""
Spot creative fatigue among ${format} creatives: compare each creative's click-through
rate in the last 7 days with its rate in the ${weeks} weeks before that, and list the
creatives whose rate fell, biggest drop first.
"""
sql = """
WITH bounds AS (SELECT max(date) AS last_day FROM daily_stat),
rates AS (
    SELECT cr.name AS creative,
           sum(CASE WHEN s.date > b.last_day - 7 THEN s.clicks END)
             / sum(CASE WHEN s.date > b.last_day - 7 THEN s.impressions END) AS recent_ctr,
           sum(CASE WHEN s.date <= b.last_day - 7 THEN s.clicks END)
             / sum(CASE WHEN s.date <= b.last_day - 7 THEN s.impressions END) AS earlier_ctr
    FROM daily_stat s
    CROSS JOIN bounds b
    JOIN ad ON ad.id = s.ad_id
    JOIN creative cr ON cr.id = ad.creative_id
    WHERE cr.format = ? AND s.date > b.last_day - 7 - 7 * ${weeks}
    GROUP BY cr.id, cr.name
)
SELECT creative, earlier_ctr, recent_ctr, recent_ctr / earlier_ctr - 1 AS change
FROM rates
WHERE earlier_ctr > 0 AND recent_ctr < earlier_ctr
ORDER BY change, creative
"""
result = api.query(sql, [${format}])
