"""Fixtures: a small real DuckDB warehouse and warm pools over it."""

from __future__ import annotations

import hashlib
import sys
from contextlib import contextmanager
from dataclasses import replace
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


# Fake secrets exported in the host while a pool runs: the first under the name the
# openai teacher documents (`api_key_env`), the second found only through `secret_env`.
HOST_SECRETS = {"OPENAI_API_KEY": "sk-craft-test-4f9c2e7a1b3d5e", "CRAFT_TEST_DB_DSN": "postgres://craft:hunter2-9x7q@db/prod"}


@contextmanager
def pool_under_host_secrets(warehouse: Path, limits: SandboxLimits = TEST_LIMITS):
    """A one-worker pool started (and, if a worker dies, restarted) with HOST_SECRETS exported."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in HOST_SECRETS.items():
            patch.setenv(name, value)
        with SandboxPool(1, warehouse, replace(limits, secret_env=("CRAFT_TEST_DB_DSN",)), "fake_api:make_api") as pool:
            yield pool


def everything_returned(run) -> str:
    """All the text a run brings back to the host, the whole result frame included."""
    frame = run.result_frame.to_csv(index=False) if run.result_frame is not None else ""
    return "\n".join([run.error_type or "", run.error_message or "", run.result_preview, run.stdout_tail,
                      *run.api_calls, *run.result_columns, frame])


def assert_no_host_secret(run) -> None:
    """Nothing secret came back, and not because it was redacted: the job never had it."""
    returned = everything_returned(run)
    assert not [name for name, value in HOST_SECRETS.items() if value in returned], returned
    assert run.redacted == () and "[redacted:" not in returned, returned


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
