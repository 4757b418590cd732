"""One ads recipe and three generated warehouses, built once per test session.

Scale 1.0 is the generator's default small warehouse (about 30k daily rows); it builds
in about a second and is large enough that most parameter draws find data.
"""

import duckdb
import pytest

from craftc.emit.binding_sql import binding_sql
from craftc.frontend import load_recipe
from runtime.workflows import execute_code, make_instances
from runtime.world.api import WarehouseApi
from runtime.world.generate import generate_warehouse

from ads_setup import DATA_SEEDS, PARAM_SETS, RECIPE, SCALE


@pytest.fixture(scope="session")
def ads():
    """The loaded ads recipe (front end), failing with its diagnostics if it has errors."""
    loaded = load_recipe(RECIPE)
    assert loaded.ok, loaded.render()
    return loaded


@pytest.fixture(scope="session")
def warehouses(ads, tmp_path_factory):
    """Seed -> read-only connection to a generated, bound warehouse."""
    root = tmp_path_factory.mktemp("warehouses")
    schema = ads.recipe.schema_
    connections = {}
    for seed in DATA_SEEDS:
        path = root / f"ads_{seed}.duckdb"
        generate_warehouse(schema, path, seed, SCALE, binding_sql(schema))
        connections[seed] = duckdb.connect(str(path), read_only=True)
    yield connections
    for con in connections.values():
        con.close()


@pytest.fixture(scope="session")
def instances(ads, warehouses):
    """Seed -> PARAM_SETS instances of every workflow, drawn from that warehouse."""
    return {
        seed: make_instances(ads.recipe, con, seed, PARAM_SETS, solution_sources=ads.solution_sources)
        for seed, con in warehouses.items()
    }


@pytest.fixture(scope="session")
def references(instances, warehouses):
    """(seed, instance id, turn index) -> the reference solution's result DataFrame."""
    results = {}
    for seed, batch in instances.items():
        api = WarehouseApi(warehouses[seed])
        for instance in batch:
            for index, turn in enumerate(instance.turns):
                results[seed, instance.instance_id, index] = execute_code(turn.code, api, instance.params)
    return results
