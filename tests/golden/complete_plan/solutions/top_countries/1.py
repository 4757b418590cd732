"""Count the ${tier} subscribers per country and keep the ${n} countries with the most."""
frame = api.query(
    """
    SELECT s.country, count(*) AS subscribers
    FROM subscriber s JOIN plan p ON p.id = s.plan_id
    WHERE p.tier = ?
    GROUP BY s.country
    ORDER BY subscribers DESC, s.country
    """,
    [${tier}],
)
result = frame.head(${n}).reset_index(drop=True)
