"""The one exception emission raises for input it cannot turn into a plan."""

from __future__ import annotations

__all__ = ["EmitError"]


class EmitError(ValueError):
    """A recipe that passed the checks still cannot be emitted; the message says why and how to fix it."""
