"""``craftc init``: scaffold a project directory (spec, recipe, solution, Makefile, README, pre-commit)."""

from __future__ import annotations

import sys
from pathlib import Path

from craftc.commands.common import UserError, color, err
from craftc.diagnostics import render_diagnostics
from craftc.importer import ImportFailed
from craftc.scaffold import ScaffoldError, scaffold_project

__all__ = ["run"]


def run(args) -> int:
    if args.docs_from and not args.source:
        raise UserError("--docs-from adds a dbt project's docs to the imported schema: give the warehouse "
                        "with --from too (`craftc init DIR --from warehouse.duckdb --docs-from dbt/`)")
    report: list[str] = []
    try:
        written = scaffold_project(args.directory, source=args.source, force=args.force, docs_from=args.docs_from,
                                   report=report)
    except ScaffoldError as exc:
        raise UserError(str(exc)) from None
    except ImportFailed as failed:
        sys.stderr.write(render_diagnostics(failed.diagnostics, color=color(sys.stderr)))
        err(f"error: `{args.directory}` was not created (see above)")
        return 1
    for line in report:
        err(line)
    root = Path(args.directory)
    for path in written:
        print(f"created {path.as_posix()}")
    recipe = next(p for p in written if p.parent.name == "recipes").relative_to(root).as_posix()
    print(f"next: cd {root.as_posix()} && craftc check {recipe} && make dataset")
    return 0
