"""
Among ${category} products, rank by units sold over all orders and keep the top ${n}.
"""
result = api.query(
    """
    SELECT p.name AS product, sum(l.quantity) AS units
    FROM order_line l JOIN product p ON p.id = l.product_id
    WHERE p.category = ?
    GROUP BY p.name
    ORDER BY units DESC, product
    LIMIT ?
    """,
    [${category}, ${n}],
)
