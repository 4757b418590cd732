"""The ${n} campaigns of ${advertiser}, largest first."""
frame = api.query(
    "SELECT c.id, c.name AS campaign FROM campaign c "
    "JOIN advertiser a ON a.id = c.advertiser_id WHERE a.name = ?",
    [${advertiser}],
)
result = frame.sort_values("id")[["campaign", "name"]].head(${n})
