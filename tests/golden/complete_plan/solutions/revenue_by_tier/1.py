"""Net revenue (payments minus refunded payments) of the last ${days} days, per plan tier."""
frame = api.query(
    """
    SELECT p.tier, sum(pay.amount) - sum(CASE WHEN pay.refunded THEN pay.amount ELSE 0 END) AS revenue
    FROM payment pay
    JOIN subscriber s ON s.id = pay.subscriber_id
    JOIN plan p ON p.id = s.plan_id
    WHERE pay.paid_at >= (SELECT max(paid_at) FROM payment) - INTERVAL (?) DAY
    GROUP BY p.tier
    """,
    [${days}],
)
result = frame.sort_values("tier").reset_index(drop=True)
