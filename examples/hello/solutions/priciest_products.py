"""Rank the products by list price, most expensive first, and keep the top ${n}."""
result = (
    api.query("SELECT name, price FROM product ORDER BY price DESC, name")
    .head(${n})
    .reset_index(drop=True)
)
