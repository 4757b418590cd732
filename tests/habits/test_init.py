"""`craftc init`: a new project that checks, formats and runs up to its dataset out of the box."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from habits_support import craftc_on_path, git


def craftc(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "craftc.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def make(target: str, project: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["make", target], cwd=project, capture_output=True, text=True, timeout=600, env=env)


def small_warehouse(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA sales")
    con.execute("CREATE TABLE sales.customer (cust_id INTEGER PRIMARY KEY, cust_nm VARCHAR, tier VARCHAR)")
    con.execute("INSERT INTO sales.customer SELECT i, 'c' || i, ['gold', 'silver'][1 + i % 2] FROM range(40) t(i)")
    con.close()
    return path


def assert_project_checks_and_builds_its_dataset(project: Path, recipe: str, env: dict) -> None:
    checked = make("check", project, env)          # craftc check + craftc fmt --check
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"recipes/{recipe}.craft: ok" in checked.stdout
    built = make("dataset", project, env)          # craftc compile + craftc run --until dataset
    assert built.returncode == 0, built.stdout + built.stderr
    manifest = json.loads((project / "runs" / recipe / "dataset" / "manifest.json").read_text())
    assert manifest["step"] == "dataset"
    accepted = (project / "runs" / recipe / "gate" / "accepted.jsonl").read_text().splitlines()
    assert accepted, "the example workflow's trajectories should pass the Tri-Gate"
    assert not (project / "runs" / recipe / "sft").exists()


def test_init_without_a_source_writes_an_example_project_that_runs(tmp_path):
    env = craftc_on_path(tmp_path)
    done = craftc("init", "my-agent", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    project = tmp_path / "my-agent"
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()) == [
        ".gitignore", ".pre-commit-config.yaml", "Makefile", "README.md", "recipes/my_agent.craft",
        "schema_specs/my_agent.craft", "solutions/priciest_products.py"]
    assert "next: cd my-agent && craftc check recipes/my_agent.craft && make dataset" in done.stdout
    assert_project_checks_and_builds_its_dataset(project, "my_agent", env)


def test_init_from_a_duckdb_warehouse_imports_its_spec_and_binds_it(tmp_path):
    env = craftc_on_path(tmp_path)
    small_warehouse(tmp_path / "shop.duckdb")
    done = craftc("init", "agent", "--from", "shop.duckdb", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    project = tmp_path / "agent"
    spec = (project / "schema_specs" / "shop.craft").read_text()
    assert 'table "sales.customer"' in spec and "# guessed:" in spec
    recipe = (project / "recipes" / "agent.craft").read_text()
    assert 'warehouse "../../shop.duckdb"' in recipe and "workflow count_customer {" in recipe
    assert_project_checks_and_builds_its_dataset(project, "agent", env)


def test_the_scaffolds_pre_commit_config_runs_its_hooks(tmp_path):
    env = craftc_on_path(tmp_path)
    assert craftc("init", "p", cwd=tmp_path, env=env).returncode == 0
    project = tmp_path / "p"
    git(project, "init", "-q")
    git(project, "add", "-A")
    done = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=project,
                          capture_output=True, text=True, timeout=300,
                          env={**env, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("Passed") == 2


def test_init_refuses_a_non_empty_directory_unless_forced(tmp_path):
    env = craftc_on_path(tmp_path)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")

    refused = craftc("init", "taken", cwd=tmp_path, env=env)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: `taken` is not empty; choose a new directory, or pass --force")
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["notes.txt"]

    forced = craftc("init", "taken", "--force", cwd=tmp_path, env=env)
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "taken" / "recipes" / "taken.craft").is_file()


@pytest.mark.parametrize("source, code", [("missing.duckdb", "E901"), ("notes.txt", "E902")])
def test_a_source_that_cannot_be_imported_creates_nothing(tmp_path, source, code):
    env = craftc_on_path(tmp_path)
    (tmp_path / "notes.txt").write_text("not a warehouse")
    done = craftc("init", "new", "--from", source, cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert code in done.stderr and "error: `new` was not created (see above)" in done.stderr
    assert not (tmp_path / "new").exists()


def test_docs_from_without_a_warehouse_says_to_give_one(tmp_path):
    env = craftc_on_path(tmp_path)
    done = craftc("init", "new", "--docs-from", "dbt", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "give the warehouse with --from too" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "new").exists()
