"""Shared helpers for tests/evolution live in evolution_support.py (a uniquely named module)."""
