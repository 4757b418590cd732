"""Fixtures for tests/compiler live in compiler_support.py, a uniquely named module that
test files can also import constants from (every test dir has its own conftest)."""

from compiler_support import *  # noqa: F401,F403
