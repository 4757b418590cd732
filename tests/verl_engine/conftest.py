"""Fixtures of the verl tests (verl_support.py)."""

from verl_support import sandbox, tiny_model_dir, verl_plan, warehouse  # noqa: F401
