"""
Add up the revenue of every order line placed in ${month_name} 2024 and report it per
sales region of the store that took the order.
"""
month = ["January", "February", "March", "April", "May", "June"].index(${month_name}) + 1
result = api.query(
    """
    SELECT s.region, sum(l.quantity * l.unit_price) AS revenue
    FROM order_line l
    JOIN sales_order o ON o.id = l.sales_order_id
    JOIN store s ON s.id = o.store_id
    WHERE year(o.placed_at) = 2024 AND month(o.placed_at) = ?
    GROUP BY s.region
    ORDER BY s.region
    """,
    [month],
)
