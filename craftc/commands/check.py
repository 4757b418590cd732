"""``craftc check``: validate recipes and schema specs without writing anything."""

from __future__ import annotations

import json
from pathlib import Path

from craftc.commands.common import err, show_diagnostics
from craftc.diagnostics import sort_diagnostics
from craftc.frontend import load_recipe, load_schema, looks_like_schema

__all__ = ["run"]


def run(args) -> int:
    # A schema spec is checked on its own; a recipe together with the schema it uses.
    profile = getattr(args, "profile", None)
    results = [(recipe, load_schema(recipe) if looks_like_schema(Path(recipe)) else load_recipe(recipe, profile))
               for recipe in args.recipes]
    if args.preflight:
        for recipe, load in results:
            _preflight(recipe, load, quiet=args.format == "json")
    if args.format == "json":
        payload = [{"file": r, "ok": load.ok, "diagnostics": json.loads(load.to_json())} for r, load in results]
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        for recipe, load in results:
            show_diagnostics(load)
            if load.ok:
                print(f"{recipe}: ok")
    return 0 if all(load.ok for _, load in results) else 1


def _preflight(recipe: str, load, quiet: bool) -> None:
    """Add the preflight's findings (E310, E311) to a recipe that checked clean."""
    if load.recipe is None:
        return
    # Imported here, only with --preflight: it brings the sandbox, DuckDB and pandas,
    # which a plain `craftc check` must not pay for.
    from craftc.preflight import preflight

    if not quiet:
        err(f"preflight: running every reference of `{recipe}` through the gates ...")
    found = preflight(load, Path(recipe))
    load.diagnostics = sort_diagnostics([*load.diagnostics, *found])
