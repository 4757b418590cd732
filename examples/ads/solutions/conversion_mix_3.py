"""
For click-through conversions of the last ${days} days, per conversion category, add
the average number of days between the click and the conversion to the count and value.
"""
conversions = api.query(
    """
    SELECT act.category, conv.value, conv.converted_at, cl.clicked_at
    FROM conversion conv
    JOIN conversion_action act ON act.id = conv.conversion_action_id
    LEFT JOIN click cl ON cl.id = conv.click_id
    WHERE conv.converted_at > (SELECT max(converted_at) FROM conversion) - INTERVAL (${days}) DAY
      AND NOT conv.is_view_through
    """
)
conversions["lag_days"] = (conversions["converted_at"] - conversions["clicked_at"]).dt.total_seconds() / 86400
result = (
    conversions.groupby("category", as_index=False)
    .agg(conversions=("value", "size"), value=("value", "sum"), average_lag_days=("lag_days", "mean"))
    .sort_values("category").reset_index(drop=True)
)
