"""The ${n} campaigns with the most clicks."""
stats = api.table("daily_stat")
stats = stats[stats["clicks"] > 0]
result = stats.groupby("campaign_id", as_index=False)["clickz"].sum().head(${n})
