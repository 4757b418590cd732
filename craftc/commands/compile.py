"""``craftc compile``: check recipes and write their plan dirs."""

from __future__ import annotations

import re
from pathlib import Path

from craftc.commands.common import UserError, err, show_diagnostics
from craftc.emit.compile import compile_recipe, plan_dir_files
from craftc.emit.write import write_plan_files

__all__ = ["run"]

_RECIPE_DECL = re.compile(r"^\s*recipe\s+\w+\s*\{", re.MULTILINE)


def _recipes_under(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise UserError(f"no recipe given and `{folder}` does not exist; "
                        "run `craftc compile RECIPE` or create recipes/NAME.craft")
    # A schema spec may sit next to the recipes; only files that declare a recipe compile.
    recipes = [p for p in sorted(folder.glob("*.craft")) if _RECIPE_DECL.search(p.read_text(errors="replace"))]
    if not recipes:
        raise UserError(f"no recipe given and no .craft file in `{folder}`; run `craftc compile RECIPE`")
    return recipes


def run(args) -> int:
    recipes = [Path(r) for r in args.recipes] or _recipes_under(Path("recipes"))
    failed = 0
    for recipe in recipes:
        compiled = compile_recipe(recipe, args.profile)
        show_diagnostics(compiled.load)
        if not compiled.ok:
            err(f"error: `{recipe}` was not compiled (see above)")
            failed += 1
            continue
        if args.output and len(recipes) == 1:
            out = Path(args.output)
        else:
            out = Path(args.output or "build") / compiled.recipe.name
        files = plan_dir_files(compiled, recipe, out)
        write_plan_files(files, out)
        print(f"compiled {recipe} -> {out} (profile {compiled.recipe.profile}, {len(files)} files)")
    return 1 if failed else 0
