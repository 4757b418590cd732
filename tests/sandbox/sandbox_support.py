"""Fixtures: a small real DuckDB warehouse and warm pools over it."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import duckdb
import pytest

from runtime.sandbox import SandboxLimits, SandboxPool

HERE = Path(__file__).parent
if str(HERE) not in sys.path:  # so workers can import `fake_api`
    sys.path.insert(0, str(HERE))

# Tight limits keep the hostile suite fast; each is well above what good code needs.
TEST_LIMITS = SandboxLimits(wall_timeout_s=4.0, cpu_s=1, memory_mb=512, max_result_rows=50,
                            max_result_bytes=1 << 20, max_file_mb=4, max_stdout_chars=200,
                            max_stdout_total_chars=100_000)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("world") / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE campaigns AS SELECT range AS id, 'campaign ' || range AS name, "
                "range % 3 AS advertiser_id, (range * 12.5)::DOUBLE AS budget FROM range(200)")
    con.execute("CREATE TABLE advertisers AS SELECT * FROM (VALUES (0, 'Acme'), (1, 'Globex'), (2, 'Initech')) t(id, name)")
    con.execute("CREATE TABLE daily_stats AS SELECT range % 200 AS campaign_id, DATE '2024-01-01' + (range // 200)::INT AS day, "
                "range % 97 AS clicks FROM range(20000)")
    con.close()
    return path


@pytest.fixture(scope="session")
def pool(warehouse):
    with SandboxPool(2, warehouse, TEST_LIMITS, "fake_api:make_api") as pool:
        yield pool


@pytest.fixture(scope="session")
def warehouse_digest(warehouse) -> str:
    return sha256(warehouse)
