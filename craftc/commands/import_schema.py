"""``craftc import``: write a schema spec from a warehouse, SQL DDL or dbt; ``--check`` reports drift."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from craftc.atomic import write_atomic
from craftc.commands.common import UserError, color, show_diagnostics
from craftc.diagnostics import render_diagnostics
from craftc.frontend import load_schema
from craftc.importer import ImportFailed, compute_drift, import_schema, read_source, render_drift

__all__ = ["run"]


def run(args) -> int:
    """Write a schema spec from a source, or (--check) report drift against one."""
    try:
        if args.check:
            load = load_schema(args.check)
            if load.schema is None:
                show_diagnostics(load)
                return 1
            drift = compute_drift(load.schema, read_source(args.source, args.dialect))
            if args.format == "json":
                print(json.dumps(drift.to_dict(), indent=2, sort_keys=True))
            else:
                sys.stdout.write(render_drift(drift, args.check, args.source))
            return 2 if drift.changes else 0
        report: list[str] = []
        text = import_schema(args.source, name=args.name, dialect=args.dialect, docs_from=args.docs_from,
                             report=report)
        for line in report:
            sys.stderr.write(line + "\n")
    except ImportFailed as failed:
        sys.stderr.write(render_diagnostics(failed.diagnostics, color=color(sys.stderr)))
        return 1
    if not args.output:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if out.exists() and not args.force:
        raise UserError(f"`{out}` exists; pass --force to overwrite it, or compare with "
                        f"`craftc import {args.source} --check {out}`")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)
    print(f"wrote {out} ({text.count('entity ')} entities); review every `# guessed:` line")
    return 0
