"""`warehouse "path"` is relative to the recipe file, like `uses schema` and `solution`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def craftc(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def shop_tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples/shop", tmp_path / "repo/examples/shop",
                    ignore=shutil.ignore_patterns("*.duckdb", "*.wal"))
    built = subprocess.run([sys.executable, "examples/shop/build_warehouse.py", "examples/shop/shop.duckdb"],
                           cwd=tmp_path / "repo", capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    return tmp_path / "repo"


def test_the_warehouse_is_found_relative_to_the_recipe_from_any_working_directory(tmp_path):
    repo = shop_tree(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    compiled = craftc("compile", repo / "examples/shop/shop.craft", "-o", "plans/shop", cwd=elsewhere)
    assert compiled.returncode == 0, compiled.stderr
    plan_dir = elsewhere / "plans/shop"
    plan = json.loads((plan_dir / "plan.json").read_text())
    assert plan["recipe"]["warehouse"] == "shop.duckdb"          # as written: relative to the recipe
    assert "source.json" not in plan["artifacts"]
    source = json.loads((plan_dir / "source.json").read_text())
    assert not os.path.isabs(source["recipe_dir"])
    assert (plan_dir / source["recipe_dir"]).resolve() == (repo / "examples/shop").resolve()
    third = tmp_path / "third"
    third.mkdir()
    ran = craftc("run", plan_dir, "--run-dir", third / "run", "--only", "world", cwd=third)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    manifest = json.loads((third / "run/world/manifest.json").read_text())
    assert manifest["metrics"]["warehouse"] == "existing"


def test_a_recipe_without_a_warehouse_path_writes_no_source_file(tmp_path):
    compiled = craftc("compile", ROOT / "examples/hello/hello.craft", "-o", tmp_path / "plan", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert not (tmp_path / "plan/source.json").exists()
