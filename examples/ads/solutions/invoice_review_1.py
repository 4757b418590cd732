"""
Show the amount invoiced to the advertiser per month over the last ${months} invoiced
months, all of its accounts together.
"""
sql = """
WITH recent AS (
    SELECT DISTINCT month FROM invoice ORDER BY month DESC LIMIT ${months}
)
SELECT i.month, sum(i.amount) AS invoiced
FROM invoice i
JOIN account acc ON acc.id = i.account_id
JOIN advertiser a ON a.id = acc.advertiser_id
WHERE a.name = ? AND i.month IN (SELECT month FROM recent)
GROUP BY i.month
ORDER BY i.month
"""
result = api.query(sql, [${advertiser}])
