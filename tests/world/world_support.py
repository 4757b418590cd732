"""Shared fixtures: the ads schema and one warehouse generated once per test session."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from spec_loader import load_spec  # noqa: E402

from craftc.emit.binding_sql import binding_sql  # noqa: E402
from runtime.world.api import WarehouseApi  # noqa: E402
from runtime.world.generate import generate_warehouse  # noqa: E402

SEED = 7


@pytest.fixture(scope="session")
def ads_schema():
    return load_spec()


@pytest.fixture(scope="session")
def warehouse(ads_schema, tmp_path_factory) -> Path:
    """The default-scale ads warehouse (scale 1, seed 7)."""
    path = tmp_path_factory.mktemp("world") / "warehouse.duckdb"
    generate_warehouse(ads_schema, path, seed=SEED, scale=1.0, binding_sql=binding_sql(ads_schema))
    return path


@pytest.fixture()
def con(warehouse):
    connection = duckdb.connect(str(warehouse), read_only=True)
    yield connection
    connection.close()


@pytest.fixture()
def api(con) -> WarehouseApi:
    return WarehouseApi(con)


def build(schema, path: Path, seed: int = SEED, scale: float = 0.2) -> Path:
    """A small warehouse for tests that compare two builds."""
    generate_warehouse(schema, path, seed=seed, scale=scale, binding_sql=binding_sql(schema))
    return path
