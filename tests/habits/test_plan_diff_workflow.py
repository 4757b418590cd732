"""examples/ci: the PR-comment workflow's script against two revisions of a recipe."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from habits_support import REPO, craftc_on_path, git, repo_with_hello

SCRIPT = REPO / "examples" / "ci" / "plan_diff.sh"
WORKFLOW = REPO / "examples" / "ci" / "craft-plan-diff.yml"


def plan_diff(repo: Path, env: dict, *args: str) -> tuple[subprocess.CompletedProcess, str, str]:
    outputs = repo / "github_output"
    outputs.write_text("")
    done = subprocess.run(["bash", str(SCRIPT), *args], cwd=repo, capture_output=True, text=True, timeout=300,
                          env={**env, "PLAN_DIFF_OUT": "comment.md", "GITHUB_OUTPUT": str(outputs)})
    comment = (repo / "comment.md").read_text() if (repo / "comment.md").exists() else ""
    return done, comment, outputs.read_text()


def test_a_changed_plan_is_posted_as_markdown_and_is_not_a_failure(tmp_path):
    env = craftc_on_path(tmp_path)
    repo = repo_with_hello(tmp_path / "repo")
    recipe = repo / "recipes" / "hello.craft"
    recipe.write_text(recipe.read_text().replace("epochs 1", "epochs 2"))
    git(repo, "commit", "-qam", "train longer")

    done, comment, outputs = plan_diff(repo, env, "HEAD~1")

    assert done.returncode == 0, done.stderr
    assert comment.startswith("<!-- craft-plan-diff -->\n## craft plan diff against `HEAD~1`")
    assert "### craft plan diff:" in comment and "```diff" in comment
    assert "! stage sft { epochs 1 -> 2 }" in comment
    assert "**Plan: 0 to add, 1 to change, 0 to remove.**" in comment
    assert outputs == "changed=true\n"


def test_an_unchanged_plan_says_so(tmp_path):
    env = craftc_on_path(tmp_path)
    repo = repo_with_hello(tmp_path / "repo")

    done, comment, outputs = plan_diff(repo, env, "HEAD")

    assert done.returncode == 0, done.stderr
    assert "### `recipes/hello.craft`: no changes" in comment
    assert outputs == "changed=false\n"


def test_a_recipe_that_no_longer_compiles_fails_the_check_and_shows_why(tmp_path):
    env = craftc_on_path(tmp_path)
    repo = repo_with_hello(tmp_path / "repo")
    recipe = repo / "recipes" / "hello.craft"
    recipe.write_text(recipe.read_text().replace("uses  Product", "uses  Prodcut"))

    done, comment, _ = plan_diff(repo, env, "HEAD")

    assert done.returncode == 1
    assert "### `recipes/hello.craft`: the plan diff failed (exit 1)" in comment
    assert "`Prodcut`" in comment and "```text" in comment


def test_a_recipe_new_in_the_pull_request_is_listed(tmp_path):
    env = craftc_on_path(tmp_path)
    repo = repo_with_hello(tmp_path / "repo")
    (repo / "recipes" / "hello.craft").rename(repo / "recipes" / "hello2.craft")

    done, comment, outputs = plan_diff(repo, env, "HEAD", "recipes/hello2.craft")

    assert done.returncode == 0, done.stderr
    assert "### `recipes/hello2.craft`: new in this pull request" in comment
    assert outputs == "changed=true\n"


@pytest.mark.parametrize("limit", [300, 600])
def test_a_long_comment_is_cut_below_githubs_limit_with_a_note(tmp_path, limit):
    env = craftc_on_path(tmp_path)
    repo = repo_with_hello(tmp_path / "repo")
    recipe = repo / "recipes" / "hello.craft"
    recipe.write_text(recipe.read_text().replace("epochs 1", "epochs 2"))

    done, comment, _ = plan_diff(repo, {**env, "PLAN_DIFF_MAX_CHARS": str(limit)}, "HEAD")

    assert done.returncode == 0, done.stderr
    assert len(comment) < limit + 200
    assert comment.endswith(f"**Truncated at {limit} characters**: run `craftc diff RECIPE --rev HEAD` locally "
                            "for the whole diff.\n")
    # A block the cut left open is closed, so the note renders as text.
    lines = comment.splitlines()
    assert sum(line.startswith("```") for line in lines) % 2 == 0
    assert lines.count("</details>") == sum(line.startswith("<details>") for line in lines)


def test_the_workflow_runs_the_script_against_the_base_branch_and_posts_its_output():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["plan-diff"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0     # --rev needs the base commit
    diff_step = next(s for s in steps if "plan_diff.sh" in s.get("run", ""))
    assert 'origin/${{ github.base_ref }}' in diff_step["run"]
    post = next(s for s in steps if "gh pr comment" in s.get("run", ""))
    assert diff_step["env"]["PLAN_DIFF_OUT"] in post["run"]
    assert workflow["permissions"]["pull-requests"] == "write"
