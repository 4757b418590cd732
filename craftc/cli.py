"""``craftc``: compile, check, diff, format and explain recipes, and run plans.

Exit codes: 0 success (``diff``: the plans are the same), 1 an error in the input or
the run, 2 ``diff`` found differences. Diagnostics go to stderr; results to stdout.

This module only parses the command line. Each subcommand is a module of
:mod:`craftc.commands` with ``run(args) -> int``, named in ``COMMANDS`` and imported by
:func:`main` when that subcommand runs and not before: ``craftc --help``, ``compile``
and ``check`` never import the runtime, rich or the importer's dependencies.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from craftc.commands.common import UserError, err
from craftc.emit.errors import EmitError
from craftc.version import __version__

__all__ = ["main", "build_parser", "COMMANDS"]

STEPS = ("world", "distill", "gate", "dataset", "sft", "grpo", "eval", "report")

# Subcommand -> the module that runs it (see the module docstring).
COMMANDS = {
    "compile": "craftc.commands.compile",
    "check": "craftc.commands.check",
    "diff": "craftc.commands.diff",
    "compare": "craftc.commands.compare",
    "fmt": "craftc.commands.fmt",
    "explain": "craftc.commands.explain",
    "import": "craftc.commands.import_schema",
    "init": "craftc.commands.init",
    "run": "craftc.commands.run",
    "export": "craftc.commands.export",
}


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

    p = sub.add_parser("check", help="validate recipes without writing anything")
    p.add_argument("recipes", nargs="+", metavar="RECIPE")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--preflight", action="store_true",
                   help="also build the warehouse (in a temp dir) and run every reference solution "
                        "through the gates, as a run would, before any teacher is called (E315, E316, W317)")
    p.add_argument("--profile", metavar="NAME", help="check the recipe with a profile it declares applied")

    p = sub.add_parser("diff", help="compare two plans (exit 0 same, 2 different, 1 error)")
    p.add_argument("sides", nargs="+", metavar="A B", help="two plan dirs or recipes, or one recipe with --rev")
    p.add_argument("--rev", metavar="REV", help="compare RECIPE at git revision REV with the working tree")
    p.add_argument("--profile", metavar="NAME", help="profile to compile recipe sides with")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--full", action="store_true",
                   help="list every attribute and every file diff (JSON always holds everything)")
    p.add_argument("--run-dir", metavar="DIR",
                   help="a previous run of the old plan: show each step's wall time and what the reruns cost")

    p = sub.add_parser("compare", help="one arm of a run against one arm of another, paired turn by turn")
    p.add_argument("run_a", metavar="RUN_A", help="a run dir (its eval/episodes/ are read)")
    p.add_argument("run_b", metavar="RUN_B", help="a run dir scored on the same split")
    p.add_argument("--arm", default="craft", help="the arm of RUN_A (default: craft)")
    p.add_argument("--arm-b", metavar="ARM", help="the arm of RUN_B (default: --arm)")
    p.add_argument("--replicates", type=int, default=1, metavar="N",
                   help="runs of `craftc run --replicates N`: replicate k of RUN_A against replicate k of RUN_B, "
                        "and the mean difference with the spread between replicates in its interval")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")

    p = sub.add_parser("fmt", help="format .craft files canonically")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--check", action="store_true", help="only report files that would change (exit 1)")

    p = sub.add_parser("explain", help="document a diagnostic code or a setting (`stage.lr`, `warmup`)")
    p.add_argument("code", metavar="CODE|SETTING")

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

    p = sub.add_parser("init", help="scaffold a new project: schema spec, recipe, solution, Makefile, pre-commit")
    p.add_argument("directory", metavar="DIR", help="a new or empty directory")
    p.add_argument("--from", dest="source", metavar="SOURCE",
                   help="import the schema spec from a DuckDB warehouse, SQL DDL or dbt YAML (as `craftc import`)")
    p.add_argument("--docs-from", metavar="DBT",
                   help="with --from: add docs and tests (money in cents, accepted_values, relationships) "
                        "from a dbt project, .yml or manifest, as `craftc import --docs-from`")
    p.add_argument("--force", action="store_true", help="write into a non-empty DIR, overwriting same-named files")

    p = sub.add_parser("run", help="execute a plan dir step by step")
    p.add_argument("plan_dir", nargs="?", metavar="PLAN_DIR", help="default: the one plan under build/")
    p.add_argument("--run-dir", metavar="DIR", help="default: runs/<recipe name>")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--only", choices=STEPS, metavar="STEP", help=f"one of {', '.join(STEPS)}")
    group.add_argument("--from", dest="from_step", choices=STEPS, metavar="STEP")
    p.add_argument("--until", choices=STEPS, metavar="STEP")
    p.add_argument("--force", action="store_true",
                   help="rerun the selected steps even when their inputs are unchanged")
    p.add_argument("--replicates", type=int, default=1, metavar="N",
                   help="train and evaluate N seeds on the same data (sft, grpo and eval again for each extra "
                        "seed, under RUN_DIR/replicates/); the report gives each arm's mean and spread")
    p.add_argument("--no-launch", action="store_true",
                   help="training steps write their step configs and print the launch.sh commands "
                        "instead of training (to launch by hand, e.g. on a cluster); a later run adopts "
                        "what the launches trained")

    p = sub.add_parser("export", help="a trained stage of a run as a Hugging Face model dir with a model card")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run dir of `craftc run`")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the model directory to write")
    p.add_argument("--stage", help="the stage to export (default: the last one)")
    p.add_argument("--plan", metavar="PLAN_DIR", help="the plan the run ran (default: build/<recipe name>)")
    p.add_argument("--adapter-only", action="store_true",
                   help="a `lora` stage: export the adapter (PEFT) instead of the merged model")
    p.add_argument("--push", metavar="REPO", help="upload the export to this Hugging Face Hub repo (org/name)")
    p.add_argument("--dry-run", action="store_true", help="with --push: list what would be uploaded")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``craftc`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 1
    try:
        return importlib.import_module(COMMANDS[args.command]).run(args)
    except UserError as exc:
        err(f"error: {exc}")
        return 1
    except EmitError as exc:
        err(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        err("interrupted")
        return 130
    except Exception as exc:  # the last guard: a user never sees a traceback for our bug
        if os.environ.get("CRAFT_DEBUG") == "1":
            raise
        err(f"internal error: {type(exc).__name__}: {exc}")
        err("hint: this is a bug in craftc; rerun with CRAFT_DEBUG=1 for the traceback and report it")
        return 1


if __name__ == "__main__":
    sys.exit(main())
