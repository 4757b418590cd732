"""``craftc fmt``: format .craft files canonically (``--check`` only reports)."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from craftc.atomic import write_atomic
from craftc.commands.common import err
from craftc.diagnostics import render_diagnostics
from craftc.fmt import format_file

__all__ = ["run"]


def run(args) -> int:
    unformatted = failed = 0
    for name in args.files:
        path = Path(name)
        result = format_file(path)
        if result.text is None:
            # A file that does not parse is reported, never rewritten.
            failed += 1
            sys.stderr.write(render_diagnostics(result.diagnostics))
            continue
        if not result.changed:
            continue
        unformatted += 1
        if args.check:
            print(f"would reformat {path}")
            sys.stdout.writelines(_unified_diff(path, result.text))
        else:
            write_atomic(path, result.text)
            print(f"reformatted {path}")
    if failed:
        return 1
    if args.check and unformatted:
        err(f"{unformatted} file(s) would be reformatted; run `craftc fmt FILE...`")
        return 1
    return 0


def _unified_diff(path: Path, formatted: str) -> list[str]:
    """What `craftc fmt` would change in ``path``, as a unified diff."""
    before = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines = list(difflib.unified_diff(before, formatted.splitlines(keepends=True),
                                      f"{path.as_posix()}", f"{path.as_posix()} (formatted)"))
    return [line if line.endswith("\n") else line + "\n" for line in lines]
