"""The shop example: a second domain built from an existing warehouse, end to end.

Nothing in the compiler or the runtime knows about shops: the spec was imported from
the warehouse, the recipe binds that warehouse instead of generating one, and the
same world step, workflows code and expectations run on it.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from craftc.frontend import load_recipe
from runtime.world.api import WarehouseApi
from runtime.workflows.expectations import check_result
from runtime.workflows.instances import make_instances
from runtime.workflows.solutions import execute_code

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """A work dir laid out like the repository, with the shop warehouse built and bound."""
    work = tmp_path_factory.mktemp("shop")
    shutil.copytree(ROOT / "examples/shop", work / "examples/shop",
                    ignore=shutil.ignore_patterns("*.duckdb", "*.wal"))
    built = run("examples/shop/build_warehouse.py", "examples/shop/shop.duckdb", cwd=work)
    assert built.returncode == 0, built.stderr
    return work


def test_the_reviewed_spec_still_matches_the_warehouse_it_was_imported_from(shop):
    checked = run("-m", "craftc.cli", "import", "examples/shop/shop.duckdb",
                  "--check", "examples/shop/shop_schema.craft", cwd=shop)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("No drift")


def test_a_fresh_import_compiles_and_marks_its_guesses(shop):
    imported = run("-m", "craftc.cli", "import", "examples/shop/shop.duckdb", "-o", "imported.craft",
                   "--name", "shop", cwd=shop)
    assert imported.returncode == 0, imported.stderr
    text = (shop / "imported.craft").read_text()
    assert ("# guessed: ref: `ord_id` has the name of OrdHdr's key, "
            "and all 4000 distinct values are OrdHdr keys") in text
    assert run("-m", "craftc.cli", "check", "imported.craft", cwd=shop).returncode == 0


def test_the_world_step_binds_the_existing_warehouse_without_touching_it(shop):
    source = shop / "examples/shop/shop.duckdb"
    before = source.read_bytes()
    assert run("-m", "craftc.cli", "compile", "examples/shop/shop.craft", "-o", "plan", cwd=shop).returncode == 0
    ran = run("-m", "craftc.cli", "run", "plan", "--run-dir", "run", "--only", "world", cwd=shop)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    manifest = json.loads((shop / "run/world/manifest.json").read_text())
    assert manifest["metrics"]["warehouse"] == "existing"
    assert manifest["metrics"]["row_counts"]["SalesOrder"] == 4000
    assert source.read_bytes() == before


def test_every_shop_reference_solution_passes_its_expectations_on_the_bound_warehouse(shop):
    test_the_world_step_binds_the_existing_warehouse_without_touching_it(shop)
    load = load_recipe(shop / "examples/shop/shop.craft")
    con = duckdb.connect(str(shop / "run/world/warehouse.duckdb"), read_only=True)
    instances = make_instances(load.recipe, con, seed=3, per_workflow=3,
                               solution_sources=load.solution_sources)
    assert {i.workflow for i in instances} == {w.name for w in load.recipe.workflows}
    for instance in instances:
        for turn in instance.turns:
            result = execute_code(turn.code, WarehouseApi(con), instance.params)
            assert check_result(result, result, turn.expectations).passed, instance.instance_id
            assert len(result) > 0, instance.instance_id
