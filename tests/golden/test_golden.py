"""The emitted plans of the examples and their rendered diffs, byte for byte.

Regenerate after an intended change: ``CRAFT_UPDATE_GOLDEN=1 pytest tests/golden``,
then review the file diffs like any code change.
"""

from __future__ import annotations

import json

import pytest
from golden_files import REPO, check_file, check_tree

from craftc.diff import PlanSide, diff_sides, load_side, render_json, render_markdown, render_text
from craftc.emit.compile import compile_recipe


def compiled_files(recipe: str, profile: str | None = None) -> dict[str, bytes]:
    compiled = compile_recipe(REPO / recipe, profile)
    assert compiled.ok, compiled.load.render()
    return compiled.files


@pytest.mark.parametrize("example", ["hello", "complete"])
def test_emitted_plan_matches_golden(example):
    check_tree(f"{example}_plan", compiled_files(f"examples/{example}/{example}.craft"))


def cluster_diff():
    before = compiled_files("examples/complete/complete.craft")
    after = compiled_files("examples/complete/complete.craft", "cluster")
    return diff_sides(PlanSide("build/complete", json.loads(before["plan.json"]), before),
                      PlanSide("build/complete-cluster", json.loads(after["plan.json"]), after))


@pytest.mark.parametrize("fmt,render", [("txt", render_text), ("json", render_json), ("md", render_markdown)])
def test_rendered_profile_diff_matches_golden(fmt, render):
    check_file(f"diff/complete_cluster.{fmt}", render(cluster_diff()))


def ads_diff(name: str):
    """The two ads diffs stored here: the v1 recipe against the v2 recipe, and default against `cluster`."""
    if name == "ads_v1_v2":
        return diff_sides(load_side(str(REPO / "recipes/ads_analytics.craft"), label="recipes/ads_analytics.craft"),
                          load_side(str(REPO / "recipes/ads_analytics_v2.craft"),
                                    label="recipes/ads_analytics_v2.craft"))
    before = compiled_files("recipes/ads_analytics.craft")
    after = compiled_files("recipes/ads_analytics.craft", "cluster")
    return diff_sides(PlanSide("build/ads_analytics", json.loads(before["plan.json"]), before),
                      PlanSide("build/ads_analytics-cluster", json.loads(after["plan.json"]), after))


@pytest.mark.parametrize("name", ["ads_v1_v2", "ads_default_cluster"])
@pytest.mark.parametrize("fmt,render", [("txt", render_text), ("md", render_markdown)])
def test_rendered_ads_diff_matches_golden(name, fmt, render):
    check_file(f"diff/{name}.{fmt}", render(ads_diff(name)))


def test_the_v1_to_v2_review_fits_a_screenful_and_shows_the_rename_once():
    text = render_text(ads_diff("ads_v1_v2"))
    assert len(text.splitlines()) <= 150
    changes = text.split("\nChanges (", 1)[1].split("\n\n", 1)[0]
    assert [line.strip() for line in changes.splitlines() if "final_url" in line or "landing_page_url" in line] == \
        ["~ field final_url => landing_page_url"]
    # The decision comes first: verdict, retrain, reruns, impact, then the detail.
    order = [text.index(head) for head in ("Schema change: breaking", "Retrain: yes", "What reruns",
                                           "Impact (", "Changes (", "Text diffs of the prompts")]
    assert order == sorted(order)
