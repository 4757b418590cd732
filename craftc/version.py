"""The craftc version stamped into every plan.

A constant, not a lookup of installed package metadata: ``plan.json`` must be the same
bytes whether craft runs from a checkout, an editable install or a wheel. Keep it in
step with ``pyproject.toml``.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
