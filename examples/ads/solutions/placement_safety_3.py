"""
Break the spend on brand-safe sites over the last ${days} days of reporting down by site
category, counting only ${format} placements.
"""
sql = """
SELECT site.category, sum(s.cost) AS spend
FROM daily_stat s
JOIN placement p ON p.id = s.placement_id
JOIN site ON site.id = p.site_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
  AND site.is_brand_safe AND p.format = ?
GROUP BY site.category
ORDER BY spend DESC, site.category
"""
result = api.query(sql, [${format}])
