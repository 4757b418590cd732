"""
For the ${status} experiments, split the clicks, impressions and click-through rate
during the test dates by arm role, control and treatment side by side.
"""
rows = api.query(
    """
    SELECT e.name AS experiment, e.start_date, arm.role,
           sum(s.clicks) AS clicks, sum(s.impressions) AS impressions
    FROM experiment e
    JOIN experiment_arm arm ON arm.experiment_id = e.id
    JOIN ad ON ad.ad_group_id = arm.ad_group_id
    JOIN daily_stat s ON s.ad_id = ad.id
    WHERE e.status = ?
      AND s.date BETWEEN e.start_date AND coalesce(e.end_date, (SELECT max(date) FROM daily_stat))
    GROUP BY e.id, e.name, e.start_date, arm.role
    """,
    [${status}],
)
rows["ctr"] = rows["clicks"] / rows["impressions"].where(rows["impressions"] > 0)
result = (
    rows.sort_values(["start_date", "experiment", "role"], ascending=[False, True, True])
    [["experiment", "role", "clicks", "impressions", "ctr"]].reset_index(drop=True)
)
