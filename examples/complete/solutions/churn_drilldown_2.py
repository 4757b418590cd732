"""Churn rate per country, only for subscribers on a ${tier} plan."""
result = api.query(
    "SELECT s.country, avg(CASE WHEN s.churned THEN 1.0 ELSE 0.0 END) AS churn_rate "
    "FROM subscriber s JOIN plan p ON p.id = s.plan_id WHERE p.tier = ? "
    "GROUP BY s.country ORDER BY s.country",
    [${tier}],
)
