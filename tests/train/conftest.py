"""Fixtures for tests/train live in train_support.py, a uniquely named module that
test files can also import constants from (every test dir has its own conftest)."""

from train_support import *  # noqa: F401,F403
