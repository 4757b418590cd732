"""`craftc diff` classifies every schema change between two versions of the ads warehouse.

ads.craft -> ads_v1_1.craft moves tables and renames columns only: binding-only, no
retraining. ads.craft -> ads_v2.craft adds, deprecates, renames, removes and retypes
logical parts: breaking, with the workflows each change reaches.
"""

from __future__ import annotations

import json

import pytest
from evolution_support import V2_SOLUTIONS, check_golden, craftc, recipe_tree

V1 = "v1/recipes/ads_analytics.craft"
V2 = "v2/recipes/ads_analytics.craft"


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """The ads recipe on the v1 and v2 specs (v2 with its adapted budget_pacing solution), side by side."""
    root = tmp_path_factory.mktemp("versions")
    recipe_tree(root / "v1", "ads.craft")
    recipe_tree(root / "v2", "ads_v2.craft", spec_name="ads_v2.craft", solutions=V2_SOLUTIONS)
    return root


def diff(root, *args):
    return craftc("diff", V1, V2, *args, cwd=root)


def test_v1_to_v2_text_diff_matches_golden(versions):
    result = diff(versions)
    assert result.returncode == 2, result.stderr
    check_golden("ads_v1_v2.txt", result.stdout)


def test_v1_to_v2_json_diff_matches_golden(versions):
    result = diff(versions, "--format", "json")
    assert result.returncode == 2, result.stderr
    check_golden("ads_v1_v2.json", result.stdout)


def test_v1_to_v2_is_breaking_and_names_what_breaks(versions):
    data = json.loads(diff(versions, "--format", "json").stdout)
    assert data["verdict"] == "breaking"
    by_address = {}
    for change in data["schema_changes"]:
        by_address.setdefault(change["address"], []).append(change)
    removed = by_address["entity.Campaign.fields.daily_budget"]
    assert [(c["category"], c["change"], c["workflows"]) for c in removed] == \
        [("breaking", "field removed", ["budget_pacing"])]
    assert "restore `Campaign.daily_budget`" in removed[0]["fix"]
    renamed = by_address["entity.Ad.fields.final_url"][0]
    assert (renamed["category"], renamed["change"]) == ("breaking", "field renamed `final_url` -> `landing_page_url`")
    retyped = {c["change"]: c for c in by_address["entity.Keyword.fields.quality_score"]}
    assert retyped["type int -> float"]["workflows"] == ["keyword_quality"]
    assert retyped['column "qs_nbr" -> "qs_val"']["category"] == "binding-only"
    assert by_address["entity.Product"][0]["category"] == "additive"
    assert by_address["metric.cost_per_view"][0]["category"] == "additive"
    assert by_address["entity.Ad.fields.ad_strength"][0]["category"] == "additive"
    deprecated = by_address["entity.Advertiser.fields.is_active"][0]
    assert deprecated["category"] == "doc-only" and deprecated["change"].startswith("deprecated:")
    moved = by_address["entity.Conversion"][0]
    assert (moved["category"], moved["change"]) == ("binding-only", 'table "adw.f_conv" -> "mart.fct_conversion"')
    assert data["verdict_line"].startswith("Schema change: breaking (retrain")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_v1_to_v1_1_diff_matches_golden(tmp_path, fmt):
    recipe_tree(tmp_path / "v1", "ads.craft")
    recipe_tree(tmp_path / "v1_1", "ads_v1_1.craft")
    result = craftc("diff", V1, "v1_1/recipes/ads_analytics.craft", "--format", fmt, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    check_golden(f"ads_v1_v1_1.{'txt' if fmt == 'text' else 'md'}", result.stdout)


def test_v1_to_v1_1_reruns_world_and_eval_and_reuses_training(tmp_path):
    recipe_tree(tmp_path / "v1", "ads.craft")
    recipe_tree(tmp_path / "v1_1", "ads_v1_1.craft")
    result = craftc("diff", V1, "v1_1/recipes/ads_analytics.craft", "--format", "json", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert [r["step"] for r in data["reruns"] if r["rerun"]] == ["world", "eval"]
    assert data["retrain"] is False and data["retrain_line"] == "Retrain: no (sft and grpo are reused)"
    text = craftc("diff", V1, "v1_1/recipes/ads_analytics.craft", cwd=tmp_path).stdout
    assert "  reused  sft" in text and "  reused  grpo" in text
    assert "  rerun   world     changed: binding, schema (physical bindings only" in text


def test_v1_to_v1_1_is_binding_only(tmp_path):
    before = recipe_tree(tmp_path / "v1", "ads.craft")
    after = recipe_tree(tmp_path / "v1_1", "ads_v1_1.craft", spec_name="ads_v1_1.craft")
    text = craftc("diff", before, after)
    data = json.loads(craftc("diff", before, after, "--format", "json").stdout)
    assert text.returncode == 2, text.stderr
    assert data["verdict"] == "binding-only"
    assert {c["category"] for c in data["schema_changes"]} == {"binding-only"}
    assert len(data["schema_changes"]) == 17
    assert "Schema change: binding-only (no retraining needed)" in text.stdout.splitlines()
    # Only the binding SQL changes: prompts, solutions and stage configs are byte-identical.
    assert [f["path"] for f in data["files"]] == ["sql/binding.sql"]


def test_markdown_diff_leads_with_the_verdict_reruns_and_impact(versions):
    markdown = diff(versions, "--format", "markdown").stdout
    assert "**Schema change: breaking (retrain" in markdown
    opened, folded = markdown.split("<details>", 1)
    assert "#### What reruns" in opened and "#### Impact (4 breaking, 3 additive" in opened
    assert "- `breaking` field Campaign.daily_budget: field removed; read by budget_pacing; fix: restore" in opened
    assert "! field final_url => landing_page_url" in folded


def test_identical_plans_have_no_verdict_and_exit_0(versions):
    result = craftc("diff", V2, V2, "--format", "json", cwd=versions)
    data = json.loads(result.stdout)
    assert result.returncode == 0
    assert (data["verdict"], data["schema_changes"]) == ("", [])
