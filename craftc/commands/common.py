"""What every subcommand shares: the user-error exception and how diagnostics are shown."""

from __future__ import annotations

import os
import sys

__all__ = ["UserError", "err", "color", "show_diagnostics"]


class UserError(Exception):
    """Bad input: printed as one `error:` line with its fix, exit 1."""


def err(message: str) -> None:
    print(message, file=sys.stderr)


def color(stream) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def show_diagnostics(load) -> None:
    if load.diagnostics:
        sys.stderr.write(load.render(color=color(sys.stderr)))
