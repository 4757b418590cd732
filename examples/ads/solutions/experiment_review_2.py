"""
For the ${status} experiments, add the clicks, impressions and click-through rate each
experiment received during its test dates (up to the last reporting day while open).
"""
sql = """
SELECT e.name AS experiment, c.name AS campaign, a.name AS advertiser,
       e.goal_metric, e.start_date,
       sum(s.clicks) AS clicks, sum(s.impressions) AS impressions,
       sum(s.clicks) / nullif(sum(s.impressions), 0) AS ctr
FROM experiment e
JOIN campaign c ON c.id = e.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
JOIN experiment_arm arm ON arm.experiment_id = e.id
JOIN ad ON ad.ad_group_id = arm.ad_group_id
JOIN daily_stat s ON s.ad_id = ad.id
WHERE e.status = ?
  AND s.date BETWEEN e.start_date AND coalesce(e.end_date, (SELECT max(date) FROM daily_stat))
GROUP BY e.id, e.name, c.name, a.name, e.goal_metric, e.start_date
ORDER BY e.start_date DESC, experiment
"""
result = api.query(sql, [${status}])
