"""
Count the orders taken by store ${store} per calendar month.
"""
result = api.query(
    """
    SELECT date_trunc('month', o.placed_at) AS month, count(*) AS orders
    FROM sales_order o JOIN store s ON s.id = o.store_id
    WHERE s.name = ?
    GROUP BY 1 ORDER BY 1
    """,
    [${store}],
)
