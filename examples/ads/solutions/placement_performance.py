"""
Rank placements by spend over the last ${days} days and keep the top ${n}; for each,
show the site it belongs to, its format, spend, click-through rate and cost per
thousand impressions.
"""
sql = """
SELECT p.name AS placement, site.domain AS site, p.format,
       sum(s.cost) AS spend,
       sum(s.clicks) / sum(s.impressions) AS ctr,
       sum(s.cost) * 1000 / sum(s.impressions) AS cpm
FROM daily_stat s
JOIN placement p ON p.id = s.placement_id
JOIN site ON site.id = p.site_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY p.id, p.name, site.domain, p.format
HAVING sum(s.impressions) > 0
ORDER BY spend DESC, placement, site
LIMIT ${n}
"""
result = api.query(sql)
