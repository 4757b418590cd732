"""The warehouse looks like ad data: the profile's figures fall in realistic ranges."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runtime.world.profile import data_profile


@pytest.fixture(scope="module")
def profile(warehouse):
    return data_profile(warehouse)


def test_spend_is_heavy_tailed_across_advertisers(profile):
    spend = profile["domain"]["ads"]["advertiser_spend"]
    assert 0.5 <= spend["top10pct_share"] <= 0.97
    assert spend["p99"] > 10 * spend["p90"] > 10 * spend["p50"] > 0


def test_ctr_is_mostly_between_half_and_five_percent(profile):
    ctr = profile["domain"]["ads"]["ctr"]
    assert ctr["share_0_5pct_to_5pct"] >= 0.8
    assert 0.005 <= ctr["p50"] <= 0.05


def test_weekends_are_quieter_than_weekdays(profile):
    share = profile["domain"]["ads"]["weekday_impression_share"]
    weekday = sum(share[d] for d in ("Mon", "Tue", "Wed", "Thu")) / 4
    assert max(share["Sat"], share["Sun"]) < weekday


def test_conversions_lag_clicks_by_days(profile, con):
    lag = profile["domain"]["ads"]["conversion_lag"]
    assert 0.2 <= lag["share_by_days"]["0"] <= 0.6
    assert lag["p90_days"] >= 3
    early = con.execute("SELECT count(*) FROM conversion c JOIN click k ON k.id = c.click_id "
                        "WHERE c.converted_at < k.clicked_at").fetchall()[0][0]
    assert early == 0


def test_nulls_appear_where_real_data_has_them(profile, con):
    nulls = profile["null_shares"]
    assert 0.05 < nulls["keyword.quality_score"] < 0.3
    assert 0 < nulls["conversion.click_id"] < 0.3               # view-through conversions
    assert nulls["daily_stat.placement_id"] > 0.2              # search rows have no placement
    assert con.execute("SELECT count(*) FROM daily_stat s JOIN ad a ON a.id = s.ad_id JOIN ad_group g "
                       "ON g.id = a.ad_group_id JOIN campaign c ON c.id = g.campaign_id "
                       "WHERE c.channel = 'search' AND s.viewable_impressions IS NOT NULL").fetchall()[0][0] == 0


def test_objects_are_paused_and_archived_too(con):
    statuses = dict(con.execute("SELECT status, count(*) FROM campaign GROUP BY status").fetchall())
    assert set(statuses) == {"enabled", "paused", "archived"} and statuses["enabled"] > statuses["archived"]


def test_every_experiment_has_a_control_and_a_treatment(con):
    arms = con.execute("SELECT experiment_id, count(*) FILTER (WHERE role = 'control'), "
                       "count(*) FILTER (WHERE role = 'treatment'), sum(traffic_share) "
                       "FROM experiment_arm GROUP BY experiment_id").fetchall()
    assert arms and all(c == 1 and t >= 1 and abs(s - 1) < 1e-3 for _, c, t, s in arms)


def test_invoices_bill_what_the_accounts_spent(con):
    billed, spent = con.execute(
        "SELECT (SELECT sum(amount) FROM invoice), (SELECT sum(cost) FROM daily_stat)").fetchall()[0]
    assert 0.97 * spent <= billed <= spent


def test_profile_command_prints_json(warehouse):
    out = subprocess.run([sys.executable, "-m", "runtime.world.profile", str(warehouse), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["row_counts"]["daily_stat"] > 0


def test_profile_command_on_a_missing_file_says_how_to_build_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "runtime.world.profile", str(tmp_path / "x.duckdb")],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "--only world" in done.stderr and "Traceback" not in done.stderr
