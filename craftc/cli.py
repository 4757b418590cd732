"""``craftc``: compile, check, diff, format and explain recipes, and run plans.

Exit codes: 0 success (``diff``: the plans are the same), 1 an error in the input or
the run, 2 ``diff`` found differences. Diagnostics go to stderr; results to stdout.
Nothing heavy is imported at start-up: ``run`` imports the runtime (and torch) only
when it runs, so ``craftc --help``, ``compile`` and ``check`` stay fast.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from craftc.version import __version__

__all__ = ["main", "build_parser"]

_RECIPE_DECL = re.compile(r"^\s*recipe\s+\w+\s*\{", re.MULTILINE)
STEPS = ("world", "distill", "gate", "dataset", "sft", "grpo", "eval", "report")


class UserError(Exception):
    """Bad input: printed as one `error:` line with its fix, exit 1."""


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _recipes_under(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise UserError(f"no recipe given and `{folder}` does not exist; "
                        "run `craftc compile RECIPE` or create recipes/NAME.craft")
    # A schema spec may sit next to the recipes; only files that declare a recipe compile.
    recipes = [p for p in sorted(folder.glob("*.craft")) if _RECIPE_DECL.search(p.read_text(errors="replace"))]
    if not recipes:
        raise UserError(f"no recipe given and no .craft file in `{folder}`; run `craftc compile RECIPE`")
    return recipes


def _color(stream) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def _show_diagnostics(load) -> None:
    if load.diagnostics:
        sys.stderr.write(load.render(color=_color(sys.stderr)))


# ------------------------------------------------------------------ compile / check


def cmd_compile(args) -> int:
    from craftc.emit.compile import compile_recipe, plan_dir_files
    from craftc.emit.plan import write_plan_files

    recipes = [Path(r) for r in args.recipes] or _recipes_under(Path("recipes"))
    failed = 0
    for recipe in recipes:
        compiled = compile_recipe(recipe, args.profile)
        _show_diagnostics(compiled.load)
        if not compiled.ok:
            _err(f"error: `{recipe}` was not compiled (see above)")
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


def cmd_check(args) -> int:
    import json

    from craftc.frontend import load_recipe, load_schema, looks_like_schema

    # A schema spec is checked on its own; a recipe together with the schema it uses.
    results = [(recipe, (load_schema if looks_like_schema(Path(recipe)) else load_recipe)(recipe))
               for recipe in args.recipes]
    if args.preflight:
        for recipe, load in results:
            _preflight(recipe, load, quiet=args.format == "json")
    if args.format == "json":
        payload = [{"file": r, "ok": load.ok, "diagnostics": json.loads(load.to_json())} for r, load in results]
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        for recipe, load in results:
            _show_diagnostics(load)
            if load.ok:
                print(f"{recipe}: ok")
    return 0 if all(load.ok for _, load in results) else 1


def _preflight(recipe: str, load, quiet: bool) -> None:
    """Add the preflight's findings (E310, E311) to a recipe that checked clean."""
    from craftc.diagnostics import sort_diagnostics

    if load.recipe is None:
        return
    from craftc.preflight import preflight   # imported here: it brings the sandbox and DuckDB

    if not quiet:
        _err(f"preflight: running every reference of `{recipe}` through the gates ...")
    found = preflight(load, Path(recipe))
    load.diagnostics = sort_diagnostics([*load.diagnostics, *found])


# ------------------------------------------------------------------ diff


def _print_diff_text(text: str) -> None:
    if not _color(sys.stdout):
        sys.stdout.write(text)
        return
    from rich.console import Console
    from rich.text import Text

    styles = {"+": "green", "-": "red", "~": "yellow", "!": "yellow", "@": "cyan"}
    console = Console(highlight=False, soft_wrap=True)
    for line in text.splitlines():
        stripped = line.lstrip()
        console.print(Text(line, style=styles.get(stripped[:1], "")))


def cmd_diff(args) -> int:
    from craftc.diff import (
        CompileFailed, DiffInputError, diff_sides, load_rev_side, load_side, render_json, render_markdown,
        render_text,
    )

    try:
        if args.rev:
            if len(args.sides) != 1:
                raise UserError("`craftc diff RECIPE --rev REV` takes exactly one recipe")
            before = load_rev_side(args.sides[0], args.rev, args.profile)
            after = load_side(args.sides[0], args.profile)
        else:
            if len(args.sides) != 2:
                raise UserError("`craftc diff` takes two plan dirs or recipes (A B), or one recipe with --rev REV")
            before, after = (load_side(side, args.profile) for side in args.sides)
    except CompileFailed as failed:
        _show_diagnostics(failed.load)
        _err(f"error: {failed}")
        return 1
    except DiffInputError as exc:
        raise UserError(str(exc)) from None
    diff = diff_sides(before, after)
    if args.run_dir and diff.reruns:
        diff = _with_run_dir(diff, args.run_dir, before.plan.get("content_hash"))
    if args.format == "json":
        sys.stdout.write(render_json(diff))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(diff, full=args.full, command=_diff_command(args)))
    else:
        _print_diff_text(render_text(diff, full=args.full))
    return 0 if diff.same else 2


def _with_run_dir(diff, run_dir: str, before_hash: str | None):
    """The diff with each step's wall time from a previous run and the cost of the reruns."""
    import dataclasses

    from craftc.diff import with_run_costs
    from runtime.runner import STEPS

    root = Path(run_dir)
    if not any((root / step / "manifest.json").is_file() for step in STEPS):
        raise UserError(f"`{run_dir}` holds no step manifests, so it is not a run dir; pass the `--run-dir` "
                        "of a previous `craftc run` of the old plan (default: runs/<recipe name>)")
    reruns, cost = with_run_costs(diff.reruns, root, before_hash)
    return dataclasses.replace(diff, reruns=reruns, cost=cost)


def _diff_command(args) -> str:
    """The command a truncation note repeats, with ``--full`` added by the note itself."""
    sides = " ".join(args.sides) + (f" --rev {args.rev}" if args.rev else "")
    return f"craftc diff {sides}" + (f" --profile {args.profile}" if args.profile else "")


# ------------------------------------------------------------------ fmt / explain / run


def cmd_fmt(args) -> int:
    from craftc.diagnostics import render_diagnostics
    from craftc.fmt import format_file

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
            from craftc.atomic import write_atomic

            write_atomic(path, result.text)
            print(f"reformatted {path}")
    if failed:
        return 1
    if args.check and unformatted:
        _err(f"{unformatted} file(s) would be reformatted; run `craftc fmt FILE...`")
        return 1
    return 0


def _unified_diff(path: Path, formatted: str) -> list[str]:
    """What `craftc fmt` would change in ``path``, as a unified diff."""
    import difflib

    before = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines = list(difflib.unified_diff(before, formatted.splitlines(keepends=True),
                                      f"{path.as_posix()}", f"{path.as_posix()} (formatted)"))
    return [line if line.endswith("\n") else line + "\n" for line in lines]


def cmd_explain(args) -> int:
    from craftc.codes import CODES, explain

    if args.code.strip().upper() not in CODES:
        from craftc.check.setting_keys import explain_setting

        setting = explain_setting(args.code.strip())
        if setting is not None:
            sys.stdout.write(setting)
            return 0
    known = args.code.strip().upper() in CODES
    (sys.stdout if known else sys.stderr).write(explain(args.code))
    return 0 if known else 1


def _default_plan_dir() -> Path:
    plans = sorted(p.parent for p in Path("build").glob("*/plan.json"))
    if len(plans) != 1:
        found = ", ".join(str(p) for p in plans) or "none"
        raise UserError(f"give the plan dir to run: `craftc run PLAN_DIR` (plans found under build/: {found})")
    return plans[0]


def cmd_run(args) -> int:
    plan_dir = Path(args.plan_dir) if args.plan_dir else _default_plan_dir()
    from runtime.runner import run_plan   # imported here: it brings torch

    return run_plan(plan_dir, args.run_dir, only=args.only, from_step=args.from_step, until=args.until,
                    force=args.force, launch=not args.no_launch)


def cmd_export(args) -> int:
    import json

    run_dir = Path(args.run_dir)
    record = run_dir / "run.json"
    if not record.is_file():
        raise UserError(f"`{run_dir}` has no run.json, so it is not a run dir; pass the `--run-dir` of a `craftc run`")
    ran = json.loads(record.read_text(encoding="utf-8"))
    plan_dir = Path(args.plan) if args.plan else Path("build") / ran["recipe"]
    from runtime.export import ExportError, export_stage, push_to_hub   # imported here: it brings torch
    from runtime.plan import PlanError, load_plan

    try:
        plan = load_plan(plan_dir)
    except PlanError as exc:
        raise UserError(f"{exc} (the plan `{run_dir}` ran; pass it with --plan)") from None
    if plan.content_hash != ran["plan_hash"]:
        raise UserError(f"`{plan_dir}` is not the plan `{run_dir}` ran (plan hash {plan.content_hash[:12]}, "
                        f"run {ran['plan_hash'][:12]}); pass the right one with --plan, or rerun the plan")
    try:
        out = export_stage(plan, plan_dir, run_dir, Path(args.output), args.stage, args.adapter_only)
        print(f"exported stage {args.stage or plan.recipe.stages[-1].name} of {run_dir} -> {out}")
        if args.push:
            files = push_to_hub(out, args.push, dry_run=args.dry_run)
            verb = "would push" if args.dry_run else "pushed"
            print(f"{verb} {len(files)} files to https://huggingface.co/{args.push}: {', '.join(files)}")
    except ExportError as exc:
        raise UserError(str(exc)) from None
    return 0


# ------------------------------------------------------------------ parser


# ------------------------------------------------------------------ import


def cmd_import(args) -> int:
    """Write a schema spec from a source, or (--check) report drift against one."""
    import json

    from craftc.diagnostics import render_diagnostics
    from craftc.importer import ImportFailed, compute_drift, import_schema, read_source, render_drift

    try:
        if args.check:
            from craftc.frontend import load_schema

            load = load_schema(args.check)
            if load.schema is None:
                _show_diagnostics(load)
                return 1
            drift = compute_drift(load.schema, read_source(args.source, args.dialect))
            if args.format == "json":
                print(json.dumps(drift.to_dict(), indent=2, sort_keys=True))
            else:
                sys.stdout.write(render_drift(drift, args.check, args.source))
            return 2 if drift.changes else 0
        text = import_schema(args.source, name=args.name, dialect=args.dialect, docs_from=args.docs_from)
    except ImportFailed as failed:
        sys.stderr.write(render_diagnostics(failed.diagnostics, color=_color(sys.stderr)))
        return 1
    if not args.output:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if out.exists() and not args.force:
        raise UserError(f"`{out}` exists; pass --force to overwrite it, or compare with "
                        f"`craftc import {args.source} --check {out}`")
    from craftc.atomic import write_atomic

    write_atomic(out, text)
    print(f"wrote {out} ({text.count('entity ')} entities); review every `# guessed:` line")
    return 0


# ------------------------------------------------------------------ init


def cmd_init(args) -> int:
    """Scaffold a project directory: spec, recipe, solution, Makefile, README, pre-commit config."""
    from craftc.diagnostics import render_diagnostics
    from craftc.importer import ImportFailed
    from craftc.scaffold import ScaffoldError, scaffold_project

    try:
        written = scaffold_project(args.directory, source=args.source, force=args.force)
    except ScaffoldError as exc:
        raise UserError(str(exc)) from None
    except ImportFailed as failed:
        sys.stderr.write(render_diagnostics(failed.diagnostics, color=_color(sys.stderr)))
        _err(f"error: `{args.directory}` was not created (see above)")
        return 1
    root = Path(args.directory)
    for path in written:
        print(f"created {path.as_posix()}")
    recipe = next(p for p in written if p.parent.name == "recipes").relative_to(root).as_posix()
    print(f"next: cd {root.as_posix()} && craftc check {recipe} && make dataset")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="craftc", description="Compile declarative CRAFT post-training recipes into runnable plans.")
    parser.add_argument("--version", action="version", version=f"craftc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("compile", help="check recipes and write their plan dirs")
    p.add_argument("recipes", nargs="*", metavar="RECIPE", help="default: every recipes/*.craft")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="plan dir (one recipe) or parent dir (several); default build/<recipe name>")
    p.add_argument("--profile", metavar="NAME", help="apply a profile the recipe declares")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("check", help="validate recipes without writing anything")
    p.add_argument("recipes", nargs="+", metavar="RECIPE")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--preflight", action="store_true",
                   help="also build the warehouse (in a temp dir) and run every reference solution "
                        "through the gates, as a run would, before any teacher is called (E310, E311)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("diff", help="compare two plans (exit 0 same, 2 different, 1 error)")
    p.add_argument("sides", nargs="+", metavar="A B", help="two plan dirs or recipes, or one recipe with --rev")
    p.add_argument("--rev", metavar="REV", help="compare RECIPE at git revision REV with the working tree")
    p.add_argument("--profile", metavar="NAME", help="profile to compile recipe sides with")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--full", action="store_true",
                   help="list every attribute and every file diff (JSON always holds everything)")
    p.add_argument("--run-dir", metavar="DIR",
                   help="a previous run of the old plan: show each step's wall time and what the reruns cost")
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("fmt", help="format .craft files canonically")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--check", action="store_true", help="only report files that would change (exit 1)")
    p.set_defaults(func=cmd_fmt)

    p = sub.add_parser("explain", help="document a diagnostic code or a setting (`stage.lr`, `warmup`)")
    p.add_argument("code", metavar="CODE|SETTING")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("import", help="write a schema spec from a warehouse, SQL DDL or dbt; --check for drift")
    p.add_argument("source", metavar="SOURCE",
                   help="a DuckDB file, a .sql DDL file, a dbt .yml file, a dbt project (directory or "
                        "dbt_project.yml) or dbt's target/manifest.json / catalog.json")
    p.add_argument("--docs-from", metavar="DBT",
                   help="add docs and tests from a dbt project, .yml or manifest to SOURCE's tables and types")
    p.add_argument("-o", "--output", metavar="SPEC", help="where to write the spec (default: stdout)")
    p.add_argument("--name", help="schema name (default: from the source file name)")
    p.add_argument("--dialect", help="SQL dialect of a DDL file (default duckdb): postgres, bigquery, snowflake, ...")
    p.add_argument("--check", metavar="SPEC", help="compare SOURCE with an existing spec; exit 2 on drift")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output of --check")
    p.add_argument("--force", action="store_true", help="overwrite an existing spec")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("init", help="scaffold a new project: schema spec, recipe, solution, Makefile, pre-commit")
    p.add_argument("directory", metavar="DIR", help="a new or empty directory")
    p.add_argument("--from", dest="source", metavar="SOURCE",
                   help="import the schema spec from a DuckDB warehouse, SQL DDL or dbt YAML (as `craftc import`)")
    p.add_argument("--force", action="store_true", help="write into a non-empty DIR, overwriting same-named files")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("run", help="execute a plan dir step by step")
    p.add_argument("plan_dir", nargs="?", metavar="PLAN_DIR", help="default: the one plan under build/")
    p.add_argument("--run-dir", metavar="DIR", help="default: runs/<recipe name>")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--only", choices=STEPS, metavar="STEP", help=f"one of {', '.join(STEPS)}")
    group.add_argument("--from", dest="from_step", choices=STEPS, metavar="STEP")
    p.add_argument("--until", choices=STEPS, metavar="STEP")
    p.add_argument("--force", action="store_true",
                   help="rerun the selected steps even when their inputs are unchanged")
    p.add_argument("--no-launch", action="store_true",
                   help="training steps write their step configs and print the launch.sh commands "
                        "instead of training (to launch by hand, e.g. on a cluster); a later run adopts "
                        "what the launches trained")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("export", help="a trained stage of a run as a Hugging Face model dir with a model card")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run dir of `craftc run`")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the model directory to write")
    p.add_argument("--stage", help="the stage to export (default: the last one)")
    p.add_argument("--plan", metavar="PLAN_DIR", help="the plan the run ran (default: build/<recipe name>)")
    p.add_argument("--adapter-only", action="store_true",
                   help="a `lora` stage: export the adapter (PEFT) instead of the merged model")
    p.add_argument("--push", metavar="REPO", help="upload the export to this Hugging Face Hub repo (org/name)")
    p.add_argument("--dry-run", action="store_true", help="with --push: list what would be uploaded")
    p.set_defaults(func=cmd_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``craftc`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 1
    try:
        return args.func(args)
    except UserError as exc:
        _err(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Exception as exc:  # the last guard: a user never sees a traceback for our bug
        from craftc.emit.errors import EmitError

        if isinstance(exc, EmitError):
            _err(f"error: {exc}")
            return 1
        if os.environ.get("CRAFT_DEBUG") == "1":
            raise
        _err(f"internal error: {type(exc).__name__}: {exc}")
        _err("hint: this is a bug in craftc; rerun with CRAFT_DEBUG=1 for the traceback and report it")
        return 1


if __name__ == "__main__":
    sys.exit(main())
