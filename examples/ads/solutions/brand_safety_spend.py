"""
Show how much display and video spend went to sites that failed brand-safety review
over the last ${days} days, per site category, with that spend as a share of all spend
in the category.
"""
sql = """
SELECT site.category,
       sum(CASE WHEN NOT site.is_brand_safe THEN s.cost ELSE 0 END) AS unsafe_spend,
       sum(s.cost) AS total_spend,
       sum(CASE WHEN NOT site.is_brand_safe THEN s.cost ELSE 0 END) / sum(s.cost) AS unsafe_share
FROM daily_stat s
JOIN placement p ON p.id = s.placement_id
JOIN site ON site.id = p.site_id
WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
GROUP BY site.category
HAVING sum(s.cost) > 0
ORDER BY unsafe_share DESC, site.category
"""
result = api.query(sql)
