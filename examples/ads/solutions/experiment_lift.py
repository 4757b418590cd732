"""
For each ${status} experiment, compare the click-through rate of its treatment arms
with its control arm over the experiment's own dates (up to the last reporting day
while it is still open) and report the relative lift of treatment over control.
"""
sql = """
WITH arm_stats AS (
    SELECT e.name AS experiment, arm.role,
           sum(s.clicks) AS clicks, sum(s.impressions) AS impressions
    FROM experiment e
    JOIN experiment_arm arm ON arm.experiment_id = e.id
    JOIN ad ON ad.ad_group_id = arm.ad_group_id
    JOIN daily_stat s ON s.ad_id = ad.id
    WHERE e.status = ?
      AND s.date >= e.start_date
      AND s.date <= coalesce(e.end_date, (SELECT max(date) FROM daily_stat))
    GROUP BY e.name, arm.role
)
SELECT t.experiment,
       c.clicks / c.impressions AS control_ctr,
       t.clicks / t.impressions AS treatment_ctr,
       (t.clicks / t.impressions) / (c.clicks / c.impressions) - 1 AS lift
FROM arm_stats t
JOIN arm_stats c ON c.experiment = t.experiment AND c.role = 'control'
WHERE t.role = 'treatment' AND c.clicks > 0 AND t.impressions > 0
ORDER BY lift DESC, t.experiment
"""
result = api.query(sql, [${status}])
