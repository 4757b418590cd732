"""Fixtures for tests/sandbox live in sandbox_support.py, a uniquely named module that
test files can also import constants from (every test dir has its own conftest)."""

from sandbox_support import *  # noqa: F401,F403
