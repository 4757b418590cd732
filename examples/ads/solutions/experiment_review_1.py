"""
List the ${status} experiments with the campaign and advertiser they test, their goal
metric and start date, most recent first.
"""
sql = """
SELECT e.name AS experiment, c.name AS campaign, a.name AS advertiser,
       e.goal_metric, e.start_date
FROM experiment e
JOIN campaign c ON c.id = e.campaign_id
JOIN advertiser a ON a.id = c.advertiser_id
WHERE e.status = ?
ORDER BY e.start_date DESC, experiment
"""
result = api.query(sql, [${status}])
