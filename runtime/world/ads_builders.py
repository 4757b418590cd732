"""The ads world's builders by logical entity name, in the order they must run.

Dimension builders come from ``runtime.world.ads_domain``, fact builders from
``runtime.world.ads_facts`` (facts read the dimensions' helpers and frames, so the
facts module imports the domain module, never the reverse); the generator imports
only this table.
"""

from __future__ import annotations

from runtime.world.ads_domain import (
    build_account, build_ad, build_ad_group, build_ad_group_audience, build_advertiser, build_agency,
    build_audience, build_bid_strategy, build_budget, build_campaign, build_conversion_action, build_creative,
    build_device, build_geo, build_keyword, build_placement, build_publisher, build_site,
)
from runtime.world.ads_facts import (
    build_click, build_conversion, build_daily_stat, build_experiment, build_experiment_arm, build_invoice,
    build_label,
)

__all__ = ["BUILDERS", "BUILD_ORDER"]

BUILDERS = {
    "Agency": build_agency, "Advertiser": build_advertiser, "Account": build_account, "Budget": build_budget,
    "BidStrategy": build_bid_strategy, "Campaign": build_campaign, "AdGroup": build_ad_group,
    "Creative": build_creative, "Ad": build_ad, "Keyword": build_keyword, "Audience": build_audience,
    "AdGroupAudience": build_ad_group_audience, "Publisher": build_publisher, "Site": build_site,
    "Placement": build_placement, "Device": build_device, "Geo": build_geo,
    "ConversionAction": build_conversion_action, "DailyStat": build_daily_stat, "Click": build_click,
    "Conversion": build_conversion, "Invoice": build_invoice, "Experiment": build_experiment,
    "ExperimentArm": build_experiment_arm, "Label": build_label,
}
"""Builders by logical entity name; a builder may read only entities earlier in BUILD_ORDER."""

BUILD_ORDER = tuple(BUILDERS)
