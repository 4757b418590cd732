"""
Show the ${n} campaigns of ${advertiser} with the largest lifetime budget.
"""
result = api.query(
    """
    SELECT c.name AS campaign, c.lifetime_budget
    FROM campaign c JOIN advertiser a ON a.id = c.advertiser_id
    WHERE a.name = ?
    ORDER BY c.lifetime_budget DESC
    LIMIT ${n}
    """,
    [${advertiser}],
)
