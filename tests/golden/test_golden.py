"""The emitted plans of the examples and their rendered diffs, byte for byte.

Regenerate after an intended change: ``CRAFT_UPDATE_GOLDEN=1 pytest tests/golden``,
then review the file diffs like any code change.
"""

from __future__ import annotations

import json

import pytest
from golden_files import REPO, check_file, check_tree

from craftc.diff import PlanSide, diff_sides, render_json, render_markdown, render_text
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
