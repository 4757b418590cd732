"""
Show the ${n} campaigns of ${advertiser} with the largest budget.
"""
result = api.query(
    """
    SELECT c.name AS campaign, roundup(c.daily_budget) AS budget
    FROM campaign c JOIN advertiser a ON a.id = c.advertiser_id
    WHERE a.name = ?
    ORDER BY budget DESC
    LIMIT ${n}
    """,
    [${advertiser}],
)
