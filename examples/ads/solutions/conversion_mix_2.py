"""
Count conversions and their value per conversion category over the last ${days} days,
leaving out view-through conversions.
"""
sql = """
SELECT act.category, count(*) AS conversions, sum(conv.value) AS value
FROM conversion conv
JOIN conversion_action act ON act.id = conv.conversion_action_id
WHERE conv.converted_at > (SELECT max(converted_at) FROM conversion) - INTERVAL (${days}) DAY
  AND NOT conv.is_view_through
GROUP BY act.category
ORDER BY act.category
"""
result = api.query(sql)
