"""
For ${device_type} traffic, compare return on ad spend per market tier in the last
${days} days of reporting with the ${days} days before that.
"""
sql = """
WITH bounds AS (SELECT max(date) AS last_day FROM daily_stat),
tiers AS (
    SELECT geo.market_tier,
           s.date > b.last_day - ${days} AS is_current,
           s.cost, s.conversion_value
    FROM daily_stat s
    CROSS JOIN bounds b
    JOIN geo ON geo.id = s.geo_id
    JOIN device d ON d.id = s.device_id
    WHERE d.device_type = ? AND s.date > b.last_day - 2 * ${days}
)
SELECT market_tier,
       sum(CASE WHEN is_current THEN conversion_value END)
         / sum(CASE WHEN is_current THEN cost END) AS roas,
       sum(CASE WHEN NOT is_current THEN conversion_value END)
         / sum(CASE WHEN NOT is_current THEN cost END) AS previous_roas
FROM tiers
GROUP BY market_tier
ORDER BY market_tier
"""
result = api.query(sql, [${device_type}])
