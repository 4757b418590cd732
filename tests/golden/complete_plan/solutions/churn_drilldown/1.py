"""Churn rate (churned subscribers over all subscribers) per country."""
result = api.query(
    "SELECT country, sum(CASE WHEN churned THEN 1.0 ELSE 0.0 END) / count(id) AS churn_rate "
    "FROM subscriber GROUP BY country ORDER BY country"
)
