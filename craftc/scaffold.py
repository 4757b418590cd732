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


def _imported_workflows(spec_path: Path) -> list[_Workflow]:
    """Two row-count workflows, the second held out whole for eval (a question with no
    param has one value combination, so its instances cannot be split between training
    and eval): on the first two entities, or a row count and a distinct-key count of the only one."""
    from craftc.frontend import load_schema

    load = load_schema(spec_path)
    if load.schema is None or not load.schema.entities:
        raise ScaffoldError(f"the spec imported into `{spec_path}` has no entity to write an example workflow "
                            f"for; check it with `craftc check {spec_path}`")
    first = load.schema.entities[0]
    second = load.schema.entities[1] if len(load.schema.entities) > 1 else None
    workflows = [_Workflow(name=f"count_{first.view}",
                           asks=(f"How many {first.name} records are there?", f"Count the {first.name} rows"),
                           params=(), uses=first.name, expects=("same_rows",),
                           solution=_render("solutions/row_count.py.j2", entity=first.name, view=first.view))]
    if second is not None:
        workflows.append(_Workflow(name=f"count_{second.view}",
                                   asks=(f"What is the number of {second.name} records?",
                                         f"Give me the {second.name} row count"),
                                   params=(), uses=second.name, expects=("same_rows",),
                                   solution=_render("solutions/row_count.py.j2", entity=second.name,
                                                    view=second.view)))
    else:       # other code than the first's: a held-out turn must not share a trained reference
        workflows.append(_Workflow(name=f"distinct_{first.view}",
                                   asks=(f"How many distinct {first.name} keys are there?",
                                         f"Count the different {first.name} keys"),
                                   params=(), uses=first.name, expects=("same_rows",),
                                   solution=_render("solutions/distinct_count.py.j2", entity=first.name,
                                                    view=first.view, key=first.row_identity[0])))
    return workflows


# The scaffold's model is CPU-sized: a stuffed baseline that needs more context than this
# is left out (`baseline none`), with a comment that says why.
CPU_CONTEXT = 4096
# Teacher replies run longer than the reference solutions the check counts with, and later
# eval turns carry earlier ones: the sizes leave this much room above the measured examples.
MARGIN = 1.3
_UNSIZED = {"vocab": 1024, "context": 1 << 20, "max_length": 1 << 20, "baseline_off": False, "sizes_why": ()}


def _round_up(tokens: float, step: int) -> int:
    return max(step, -(-int(tokens) // step) * step)


def fit_sizes(recipe_path: Path) -> dict:
    """`vocab`, `max_length` and `context` for the scaffold's model that hold ``recipe_path``'s
    examples, counted as `craftc check` counts them (E528), and whether the stuffed baseline
    is left out; ``sizes_why`` is the comment that says so in the recipe."""
    from craftc.check.budget import example_tokens, solution_texts
    from craftc.frontend import load_recipe

    load = load_recipe(recipe_path)
    if load.recipe is None:
        raise ScaffoldError(f"the scaffolded recipe `{recipe_path}` does not check:\n{load.render()}")
    counted = example_tokens(load.recipe, solution_texts(load.solution_sources))
    vocab = _UNSIZED["vocab"]
    max_length = _round_up(counted.longest["stripped"] * MARGIN, 128)
    stuffed = _round_up(max(counted.longest["stuffed"] * MARGIN, max_length), 256)
    why = [f"Sized to this schema: the longest stripped example is about {counted.longest['stripped']} tokens, "
           f"the stuffed baseline's {counted.longest['stuffed']}",
           f"({counted.how});",
           f"`max_length` and `context` leave {MARGIN - 1:.0%} above them. `craftc check` recounts (E528)."]
    if stuffed > CPU_CONTEXT:
        why.append(f"The stuffed baseline is off (`baseline none`): its prompt alone, the whole schema, is about "
                   f"{counted.head['stuffed']} tokens,")
        why.append(f"more than this CPU-sized model's {CPU_CONTEXT}-token context holds; for that comparison give "
                   f"`model tiny_moe` a `context` of at least {stuffed} and remove `baseline none`.")
        return {"vocab": vocab, "max_length": max_length, "context": max(1024, _round_up(max_length, 256)),
                "baseline_off": True, "sizes_why": why}
    return {"vocab": vocab, "max_length": max_length, "context": max(1024, stuffed), "baseline_off": False,
            "sizes_why": why}


def _gate_timeout(warehouse: Path | None) -> dict:
    """The execution gate's timeout for a bound warehouse: the IR's default (10 s) up to a
    million rows, a second more per further million (a query on the reference's scale), at
    most 60 s. Shorter limits rejected correct references as timeouts on a loaded machine:
    the limit is wall clock."""
    if warehouse is None:
        return {"gate_timeout": None, "gate_timeout_why": ""}
    import duckdb

    try:
        con = duckdb.connect(str(warehouse), read_only=True)
        try:
            rows = con.execute("SELECT coalesce(sum(estimated_size), 0) FROM duckdb_tables()").fetchone()[0]
        finally:
            con.close()
    except duckdb.Error:
        rows = 0
    from craftc.ir import ExecutionGate

    base = int(ExecutionGate.model_fields["timeout_s"].default)
    seconds = min(60, base + max(0, int(rows) - 1) // 1_000_000)
    return {"gate_timeout": seconds,
            "gate_timeout_why": f"The warehouse holds about {int(rows):,} rows: a candidate that runs past "
                                f"{seconds}s is rejected as a timeout."}


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    written.append(path)


def _canonical(text: str, file: str) -> str:
    from craftc.fmt import format_source

    return format_source(text, file)


def scaffold_project(target: str | os.PathLike, source: str | os.PathLike | None = None,
                     force: bool = False, docs_from: str | os.PathLike | None = None,
                     report: list[str] | None = None) -> list[Path]:
    """Write a new craft project into ``target``; return the files written, in order.

    ``docs_from`` (with ``source``): a dbt project whose docs and tests the import adds, as
    `craftc import --docs-from` does; ``report`` receives what it matched.

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
    spec_text = import_schema(source, name=schema_name, docs_from=docs_from, report=report) if source else _render(
        "example_schema.craft.j2", schema_name=schema_name)
    warehouse = None
    if source is not None and source.suffix.lower() in _DATABASE_SUFFIXES:
        # Relative to the recipe file, like every path a recipe names.
        warehouse = Path(os.path.relpath(source.resolve(), (target / "recipes").resolve())).as_posix()

    written: list[Path] = []
    spec_path = target / "schema_specs" / f"{schema_name}.craft"
    _write(spec_path, _canonical(spec_text, spec_path.as_posix()), written)
    workflows = _imported_workflows(spec_path) if source else [_example_workflow()]
    recipe_path = target / "recipes" / f"{name}.craft"
    for workflow in workflows:
        _write(target / "solutions" / f"{workflow.name}.py", workflow.solution, [])
    settings = {"name": name, "schema_name": schema_name, "warehouse": warehouse, "workflows": workflows,
                "held_out": [w.name for w in workflows[1:]], **_gate_timeout(source if warehouse else None),
                # A trained workflow without params has one value group, SFT's: no fresh GRPO row to draw.
                "grpo_sft_rows": not any(w.params for w in workflows[:1])}
    # Rendered once with room for anything, measured, then rendered with sizes that fit.
    roomy = _render("recipe.craft.j2", **settings, **_UNSIZED)
    _write(recipe_path, _canonical(roomy, recipe_path.as_posix()), [])
    recipe = _render("recipe.craft.j2", **settings, **fit_sizes(recipe_path))
    _write(recipe_path, _canonical(recipe, recipe_path.as_posix()), written)
    written += [target / "solutions" / f"{workflow.name}.py" for workflow in workflows]
    _write(target / "Makefile", _render("Makefile.j2", name=name), written)
    shown_source = source.as_posix() if source else None
    _write(target / "README.md", _render("README.md.j2", name=name, schema_name=schema_name, source=shown_source),
           written)
    _write(target / ".pre-commit-config.yaml", _render("pre-commit-config.yaml.j2"), written)
    _write(target / ".gitignore", _render("gitignore.j2"), written)
    return written
