"""
For ${category} conversions that came from a click, measure how many whole days passed
between the click and the conversion, and count conversions for each lag from the
same day up to ${max_days} days later, over conversions of the last ${days} days.
"""
conversions = api.query(
    """
    SELECT conv.converted_at, click.clicked_at
    FROM conversion conv
    JOIN click ON click.id = conv.click_id
    JOIN conversion_action act ON act.id = conv.conversion_action_id
    WHERE act.category = ?
      AND conv.converted_at > (SELECT max(converted_at) FROM conversion) - INTERVAL (${days}) DAY
    """,
    [${category}],
)
lag = (conversions["converted_at"].dt.normalize() - conversions["clicked_at"].dt.normalize()).dt.days
counts = lag[lag.between(0, ${max_days})].value_counts()
result = (
    counts.rename_axis("lag_days").reset_index(name="conversions")
    .sort_values("lag_days").reset_index(drop=True)
)
