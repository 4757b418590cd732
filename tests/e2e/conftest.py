"""Fixtures for tests/e2e live in e2e_support.py, a uniquely named module that test
files can also import helpers from (every test dir has its own conftest)."""

from e2e_support import smoke_run  # noqa: F401
