"""
For each loyalty tier, divide the number of returned orders by all orders of its customers.
"""
orders = api.query(
    "SELECT c.loyalty_tier, o.status FROM sales_order o JOIN customer c ON c.id = o.customer_id"
)
orders["returned"] = orders["status"] == "returned"
result = (
    orders.groupby("loyalty_tier", as_index=False)["returned"].mean()
    .rename(columns={"returned": "return_rate"})
)
