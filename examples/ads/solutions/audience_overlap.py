"""
Find which ${audience_type} audiences are targeted together: for each pair of such
audiences, count the ad groups that target both, and keep the ${n} most shared pairs.
"""
targeting = api.query(
    """
    SELECT t.ad_group_id, au.name AS audience
    FROM ad_group_audience t
    JOIN audience au ON au.id = t.audience_id
    WHERE au.audience_type = ? AND t.mode = 'targeting'
    """,
    [${audience_type}],
).drop_duplicates()
pairs = targeting.merge(targeting, on="ad_group_id", suffixes=("_a", "_b"))
pairs = pairs[pairs["audience_a"] < pairs["audience_b"]]
shared = pairs.groupby(["audience_a", "audience_b"]).size().reset_index(name="shared_ad_groups")
result = (
    shared.sort_values(["shared_ad_groups", "audience_a", "audience_b"], ascending=[False, True, True])
    .head(${n}).reset_index(drop=True)
)
