"""
Measure invalid traffic per publisher over the last ${days} days of the click log: the
share of logged clicks flagged invalid, for publishers with at least ${min_clicks}
logged clicks, worst first.
"""
sql = """
SELECT pub.name AS publisher,
       count(*) AS clicks,
       sum(CASE WHEN cl.is_invalid THEN 1 ELSE 0 END) AS invalid_clicks,
       avg(CASE WHEN cl.is_invalid THEN 1.0 ELSE 0.0 END) AS invalid_rate
FROM click cl
JOIN placement p ON p.id = cl.placement_id
JOIN site ON site.id = p.site_id
JOIN publisher pub ON pub.id = site.publisher_id
WHERE cl.clicked_at > (SELECT max(clicked_at) FROM click) - INTERVAL (${days}) DAY
GROUP BY pub.id, pub.name
HAVING count(*) >= ${min_clicks}
ORDER BY invalid_rate DESC, publisher
"""
result = api.query(sql)
