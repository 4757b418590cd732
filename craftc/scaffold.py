"""`craftc init`: a new project directory that `craftc check` accepts and `make run` runs.

The project holds a schema spec (imported with :func:`craftc.importer.import_schema`
when a source is given, otherwise a small example), a recipe with one workflow and
its reference solution, a Makefile, a README and a ``.pre-commit-config.yaml``. The
files are rendered from ``craftc/templates/init``; the ``.craft`` files are written
in ``craftc fmt``'s canonical form, so the format hook passes on a fresh project.

Example:
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> files = scaffold_project(root / "my_agent")
    >>> [p.relative_to(root).as_posix() for p in files][:2]
    ['my_agent/schema_specs/my_agent.craft', 'my_agent/recipes/my_agent.craft']
    >>> import shutil; shutil.rmtree(root)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

__all__ = ["scaffold_project", "ScaffoldError", "project_name"]

# Sources with rows: the recipe binds them instead of generating a warehouse.
_DATABASE_SUFFIXES = (".duckdb", ".db", ".ddb")


class ScaffoldError(Exception):
    """The target cannot be scaffolded (not empty); the message says what to do."""


@dataclass(frozen=True)
class _Workflow:
    name: str
    asks: tuple[str, ...]
    params: tuple[str, ...]
    uses: str
    expects: tuple[str, ...]
    solution: str


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=PackageLoader("craftc", "templates/init"), undefined=StrictUndefined,
                       keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)


def _render(template: str, **context) -> str:
    return _environment().get_template(template).render(**context)


def project_name(text: str) -> str:
    """A .craft name from a directory or file name: `my-agent` -> `my_agent`.

    Example:
        >>> project_name("2024 Sales-DB"), project_name("model")
        ('p_2024_sales_db', 'model_project')
    """
    from craftc.editor import grammar_keywords

    name = "".join(ch if ch.isalnum() else "_" for ch in text.lower()).strip("_") or "project"
    name = "_".join(part for part in name.split("_") if part)
    if not name[0].isalpha():
        name = f"p_{name}"
    return f"{name}_project" if name in grammar_keywords() else name


def _example_workflow() -> _Workflow:
    solution = _render("solutions/top_n.py.j2", plural="products", field="price", label="name", view="product")
    return _Workflow(name="priciest_products",
                     asks=("Which {n} products cost the most?", "Show me the {n} most expensive products"),
                     params=("n in 2..5",), uses="Product", expects=("same_rows ordered",), solution=solution)


def _imported_workflow(spec_path: Path) -> _Workflow:
    from craftc.frontend import load_schema

    load = load_schema(spec_path)
    if load.schema is None or not load.schema.entities:
        raise ScaffoldError(f"the spec imported into `{spec_path}` has no entity to write an example workflow "
                            f"for; check it with `craftc check {spec_path}`")
    entity = load.schema.entities[0]
    solution = _render("solutions/row_count.py.j2", entity=entity.name, view=entity.view)
    return _Workflow(name=f"count_{entity.view}",
                     asks=(f"How many {entity.name} records are there?", f"Count the {entity.name} rows"),
                     params=(), uses=entity.name, expects=("same_rows",), solution=solution)


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    written.append(path)


def _canonical(text: str, file: str) -> str:
    from craftc.fmt import format_source

    return format_source(text, file)


def scaffold_project(target: str | os.PathLike, source: str | os.PathLike | None = None,
                     force: bool = False) -> list[Path]:
    """Write a new craft project into ``target``; return the files written, in order.

    Raises:
        ScaffoldError: ``target`` is a file, or a non-empty directory and ``force`` is false.
        craftc.importer.ImportFailed: the source cannot be imported (diagnostics attached).
    """
    from craftc.importer import import_schema

    target = Path(target)
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"`{target}` is a file; give `craftc init` a new or empty directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ScaffoldError(f"`{target}` is not empty; choose a new directory, or pass --force to write the "
                            "project's files into it (files with the same names are overwritten)")
    name = project_name(target.resolve().name)
    source = Path(source) if source is not None else None
    schema_name = project_name(source.stem) if source else name
    # Read the source before writing anything, so a bad source leaves no half project behind.
    spec_text = import_schema(source, name=schema_name) if source else _render(
        "example_schema.craft.j2", schema_name=schema_name)
    warehouse = None
    if source is not None and source.suffix.lower() in _DATABASE_SUFFIXES:
        # Relative to the recipe file, like every path a recipe names.
        warehouse = Path(os.path.relpath(source.resolve(), (target / "recipes").resolve())).as_posix()

    written: list[Path] = []
    spec_path = target / "schema_specs" / f"{schema_name}.craft"
    _write(spec_path, _canonical(spec_text, spec_path.as_posix()), written)
    workflow = _imported_workflow(spec_path) if source else _example_workflow()
    recipe_path = target / "recipes" / f"{name}.craft"
    recipe = _render("recipe.craft.j2", name=name, schema_name=schema_name, warehouse=warehouse,
                     workflow=workflow)
    _write(recipe_path, _canonical(recipe, recipe_path.as_posix()), written)
    _write(target / "solutions" / f"{workflow.name}.py", workflow.solution, written)
    _write(target / "Makefile", _render("Makefile.j2", name=name), written)
    shown_source = source.as_posix() if source else None
    _write(target / "README.md", _render("README.md.j2", name=name, schema_name=schema_name, source=shown_source),
           written)
    _write(target / ".pre-commit-config.yaml", _render("pre-commit-config.yaml.j2"), written)
    _write(target / ".gitignore", _render("gitignore.j2"), written)
    return written
