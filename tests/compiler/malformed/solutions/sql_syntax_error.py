"""
Show the ${n} campaigns of ${advertiser} with the largest budget.
"""
result = api.query(
    """
    SELEC c.name AS campaign, c.daily_budget
    FROM campaign c JOIN advertiser a ON a.id = c.advertiser_id
    WHERE a.name = ?
    ORDER BY c.daily_budget DESC
    LIMIT ${n}
    """,
    [${advertiser}],
)
