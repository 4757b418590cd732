"""craftc: the .craft language and compiler.

Public surface of the front end (loaded lazily, so that ``import craftc.ir`` from the
runtime never pulls in the parser)::

    from craftc import load_recipe, load_schema, check_paths, format_source, explain
    result = load_recipe("recipes/ads_analytics.craft", profile=None)
    print(result.render())            # rustc-style diagnostics; result.to_json() for data
    recipe = result.recipe            # craftc.ir.Recipe, or None when there were errors
"""

from __future__ import annotations

from importlib import import_module

__all__ = [
    "load_recipe", "load_schema", "check_paths", "LoadResult",
    "Diagnostic", "render_diagnostics", "diagnostics_to_json",
    "explain", "CODES", "format_source", "format_file", "scaffold_project", "textmate_grammar",
]

_HOME = {
    "load_recipe": "craftc.frontend", "load_schema": "craftc.frontend",
    "check_paths": "craftc.frontend", "LoadResult": "craftc.frontend",
    "Diagnostic": "craftc.diagnostics", "render_diagnostics": "craftc.diagnostics",
    "diagnostics_to_json": "craftc.diagnostics",
    "explain": "craftc.codes", "CODES": "craftc.codes",
    "format_source": "craftc.fmt", "format_file": "craftc.fmt",
    "scaffold_project": "craftc.scaffold", "textmate_grammar": "craftc.editor",
}


def __getattr__(name: str):
    if name in _HOME:
        return getattr(import_module(_HOME[name]), name)
    raise AttributeError(f"module 'craftc' has no attribute {name!r}")
