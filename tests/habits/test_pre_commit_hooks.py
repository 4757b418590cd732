""".pre-commit-hooks.yaml: the hooks run by pre-commit itself (`pre-commit try-repo`, offline)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from habits_support import REPO, craftc_on_path, git, repo_with_hello


def try_hook(repo: Path, env: dict, hook: str) -> subprocess.CompletedProcess:
    # try-repo clones this checkout (HEAD plus uncommitted edits of tracked files) and runs one hook.
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook, "--all-files"],
                          cwd=repo, capture_output=True, text=True, timeout=300,
                          env={**env, "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home")})


def formatted_hello_repo(tmp_path: Path) -> tuple[Path, dict]:
    env = craftc_on_path(tmp_path)
    repo = repo_with_hello(tmp_path / "repo")
    files = [str(p.relative_to(repo)) for p in sorted((repo / "recipes").glob("*.craft"))]
    subprocess.run(["craftc", "fmt", *files], cwd=repo, env=env, check=True, capture_output=True)
    # The examples are in fmt form already; an empty commit keeps the history shape either way.
    git(repo, "commit", "-qa", "--allow-empty", "-m", "canonical format")
    return repo, env


def test_the_hooks_run_craftc_on_craft_files_without_installing_anything():
    hooks = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"craftc-fmt", "craftc-fmt-check", "craftc-check"}
    assert {hook["entry"] for hook in hooks.values()} == {"craftc fmt", "craftc fmt --check", "craftc check"}
    assert all(hook["language"] == "system" and hook["files"] == r"\.craft$" for hook in hooks.values())


def test_fmt_check_fails_on_an_unformatted_recipe_and_fmt_rewrites_it(tmp_path):
    repo, env = formatted_hello_repo(tmp_path)
    recipe = repo / "recipes" / "hello.craft"
    recipe.write_text(recipe.read_text().replace("  seed 1", "      seed    1"))
    git(repo, "add", "-A")

    check = try_hook(repo, env, "craftc-fmt-check")
    assert check.returncode == 1
    assert "would reformat recipes/hello.craft" in check.stdout

    fmt = try_hook(repo, env, "craftc-fmt")
    assert fmt.returncode == 1 and "files were modified by this hook" in fmt.stdout
    assert "  seed 1\n" in recipe.read_text()
    assert try_hook(repo, env, "craftc-fmt-check").returncode == 0


def test_check_passes_a_valid_recipe_and_fails_an_unknown_entity_with_its_code(tmp_path):
    repo, env = formatted_hello_repo(tmp_path)
    passed = try_hook(repo, env, "craftc-check")
    assert passed.returncode == 0, passed.stdout
    assert "craftc check" in passed.stdout and "Passed" in passed.stdout

    recipe = repo / "recipes" / "hello.craft"
    recipe.write_text(recipe.read_text().replace("Product\n", "Prodcut\n", 1))
    git(repo, "add", "-A")
    failed = try_hook(repo, env, "craftc-check")
    assert failed.returncode == 1
    assert "unknown entity `Prodcut`" in failed.stdout and "did you mean `Product`" in failed.stdout
