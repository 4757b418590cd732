"""
Split the spend on brand-safe sites in ${format} placements over the last ${days} days
of reporting by site category and by where on the page the placement sits.
"""
rows = api.query(
    """
    SELECT site.category, p.position, s.cost
    FROM daily_stat s
    JOIN placement p ON p.id = s.placement_id
    JOIN site ON site.id = p.site_id
    WHERE s.date > (SELECT max(date) FROM daily_stat) - ${days}
      AND site.is_brand_safe AND p.format = ?
    """,
    [${format}],
)
split = rows.groupby(["category", "position"], as_index=False)["cost"].sum()
result = split.rename(columns={"cost": "spend"}).sort_values(["category", "position"]).reset_index(drop=True)
