"""Recipe file -> plan files: the front end's ``load_recipe`` followed by emission.

This is what ``craftc compile`` and ``craftc diff RECIPE ...`` share. Diagnostics
are returned, not raised: a caller shows them all and exits 1.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from craftc.diagnostics import has_errors
from craftc.emit.errors import EmitError
from craftc.emit.plan import render_plan_files, write_plan_files
from craftc.frontend import load_recipe
from craftc.ir import Recipe

__all__ = ["Compiled", "compile_recipe", "compile_to_dir", "plan_dir_files", "SOURCE_FILE"]

# Where the recipe's directory is, relative to the plan dir: written only when the recipe
# names a warehouse file (relative to the recipe), so the world step can find it.
SOURCE_FILE = "source.json"


@dataclass(frozen=True)
class Compiled:
    """The outcome of compiling one recipe; ``files`` is None when there were errors."""

    recipe: Recipe | None
    files: dict[str, bytes] | None
    load: Any                     # the front end's LoadResult: diagnostics and how to render them

    @property
    def ok(self) -> bool:
        return self.files is not None


def _solution_sources(result) -> dict[str, str]:
    """Turn solution path -> solution text, read from the files the front end resolved."""
    texts = {}
    for plan_path, source in sorted(result.solution_sources.items()):
        try:
            texts[plan_path] = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EmitError(f"cannot read the reference solution `{source}` ({exc}); "
                            "fix the `solution` path in the recipe") from None
    return texts


def compile_recipe(path: str | os.PathLike, profile: str | None = None) -> Compiled:
    """Load, check and render one recipe in memory.

    Args:
        path: The recipe file.
        profile: A profile the recipe declares, or None for the default.

    Returns:
        A :class:`Compiled`; check ``ok``.

    Raises:
        EmitError: A checked recipe that still cannot be emitted.
    """
    result = load_recipe(Path(path), profile=profile)
    if result.recipe is None or has_errors(result.diagnostics):
        return Compiled(None, None, result)
    files = render_plan_files(result.recipe, _solution_sources(result))
    return Compiled(result.recipe, files, result)


def plan_dir_files(compiled: Compiled, recipe_path: str | os.PathLike,
                   out_dir: str | os.PathLike) -> dict[str, bytes]:
    """The files of the plan dir ``out_dir``: the plan, plus ``source.json`` when the recipe
    names a warehouse file relative to itself (``{"recipe_dir": "../../recipes"}``, relative
    to the plan dir; no absolute path, and not part of plan.json or its hash)."""
    files = dict(compiled.files)
    warehouse = compiled.recipe.warehouse
    if warehouse and not os.path.isabs(warehouse):
        recipe_dir = os.path.relpath(os.path.abspath(Path(recipe_path).parent), os.path.abspath(out_dir))
        body = json.dumps({"recipe_dir": Path(recipe_dir).as_posix()}, indent=2, sort_keys=True) + "\n"
        files[SOURCE_FILE] = body.encode("utf-8")
    return files


def compile_to_dir(path: str | os.PathLike, out_dir: str | os.PathLike, profile: str | None = None) -> Compiled:
    """Compile ``path`` and, when it checks, write the plan dir ``out_dir`` atomically."""
    compiled = compile_recipe(path, profile)
    if compiled.ok:
        write_plan_files(plan_dir_files(compiled, path, out_dir), out_dir)
    return compiled
