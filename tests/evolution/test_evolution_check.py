"""A breaking schema edit fails compilation where a workflow still reads the removed part."""

from __future__ import annotations

import json

from evolution_support import craftc, recipe_tree


def test_v1_recipe_on_the_v2_schema_names_the_workflow_and_the_fix(tmp_path):
    recipe = recipe_tree(tmp_path, "ads_v2.craft")
    result = craftc("compile", "recipes/ads_analytics.craft", "-o", "build/out", cwd=tmp_path)
    assert result.returncode == 1
    assert not (tmp_path / "build/out").exists()
    assert "error[E309]: solution of workflow `budget_pacing` reads `campaign.daily_budget`, " \
           "which schema `ads` version 2 does not have" in result.stderr
    line = next(n for n, text in enumerate(recipe.read_text().splitlines(), 1)
                if "solutions/budget_pacing.py" in text)
    # The span is the solution's own line and column; the recipe line is a note.
    assert "--> examples/ads/solutions/budget_pacing.py:8:40" in result.stderr
    assert "    SELECT c.id, c.name AS campaign, c.daily_budget" in result.stderr
    assert f"note: the solution of `budget_pacing` is named at recipes/ads_analytics.craft:{line}" \
        in result.stderr
    assert "help: restore it in the schema, map it to its new name, or update " \
           "`../examples/ads/solutions/budget_pacing.py` (line 8)" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_json_twin_reports_only_the_budget_pacing_solution(tmp_path):
    recipe_tree(tmp_path, "ads_v2.craft")
    result = craftc("check", "recipes/ads_analytics.craft", "--format", "json", cwd=tmp_path)
    [report] = json.loads(result.stdout)
    found = [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert [(d["code"], d["message"].split("`")[1]) for d in found] == [("E309", "budget_pacing")]


def test_a_param_from_a_removed_field_is_an_unknown_field(tmp_path):
    recipe = recipe_tree(tmp_path, "ads_v2.craft")
    text = recipe.read_text().replace("param advertiser from Advertiser.name",
                                      "param advertiser from Advertiser.name\n    param budget from Campaign.daily_budget", 1)
    recipe.write_text(text)
    result = craftc("check", "recipes/ads_analytics.craft", cwd=tmp_path)
    assert result.returncode == 1
    assert "error[E103]: unknown field `daily_budget` in `Campaign`" in result.stderr


def test_the_adapted_v2_recipe_compiles():
    result = craftc("check", "recipes/ads_analytics_v2.craft")
    assert result.returncode == 0, result.stderr
