"""Fixtures for tests/distill live in distill_support.py, a uniquely named module that
test files can also import constants from (every test dir has its own conftest)."""

from distill_support import *  # noqa: F401,F403
