"""Campaigns of ${advertiser} with their objective."""
campaigns = api.table("campaign", columns=["id", "name", "objectve"])
result = campaigns.head(${n})
