"""
Break display and video spend over the last ${days} days of reporting down by the
content category of the site it ran on.
"""
sql = """
SELECT site.category, sum(s.cost) AS spend
FROM daily_stat s
JOIN placement p ON p.id = s.placement_id
JOIN site ON site.id = p.site_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY site.category
ORDER BY spend DESC, site.category
"""
result = api.query(sql)
