"""Fixtures for tests/world live in world_support.py, a uniquely named module that
test files can also import constants from (every test dir has its own conftest)."""

from world_support import *  # noqa: F401,F403
