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
    """Add the preflight's findings (E315-E316 on the references, E320-W323 on the data) to a
    recipe that checked clean."""
    if load.recipe is None:
        return
    # Imported here, only with --preflight: it brings the sandbox, DuckDB and pandas,
    # which a plain `craftc check` must not pay for.
    from craftc.preflight import preflight

    if not quiet:
        err(f"preflight: measuring the schema on the data and running every reference of `{recipe}` "
            "through the gates ...")
        unsolved = [f"`{w.name}`" + (f" turn {n}" if len(w.turns) > 1 else "")
                    for w in load.recipe.workflows for n, t in enumerate(w.turns, 1) if t.solution is None]
        if unsolved:
            err(f"preflight: {', '.join(unsolved)} {'has' if len(unsolved) == 1 else 'have'} checks and no "
                "reference: params drawn on the warehouse, checks typed; nothing to send through the gates "
                "until a teacher writes candidates")
    measured: list[str] = []
    found = preflight(load, Path(recipe), report=measured)
    if measured and not quiet:
        err("preflight: the schema on the data (each key, ref and enum):")
        for line in measured:
            err(line)
    load.diagnostics = sort_diagnostics([*load.diagnostics, *found])
