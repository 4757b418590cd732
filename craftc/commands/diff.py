"""``craftc diff``: compare two plans (plan dirs, recipes, or a recipe at a git revision)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from craftc.commands.common import UserError, color, err, show_diagnostics
from craftc.diff import (
    CompileFailed, DiffInputError, diff_sides, load_rev_side, load_side, render_json, render_markdown,
    render_text, with_run_costs,
)
from runtime.runner import STEPS

__all__ = ["run"]

_STYLES = {"+": "green", "-": "red", "~": "yellow", "!": "yellow", "@": "cyan"}


def run(args) -> int:
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
        show_diagnostics(failed.load)
        err(f"error: {failed}")
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
        _print_text(render_text(diff, full=args.full))
    return 0 if diff.same else 2


def _print_text(text: str) -> None:
    if not color(sys.stdout):
        sys.stdout.write(text)
        return
    console = Console(highlight=False, soft_wrap=True)
    for line in text.splitlines():
        stripped = line.lstrip()
        console.print(Text(line, style=_STYLES.get(stripped[:1], "")))


def _with_run_dir(diff, run_dir: str, before_hash: str | None):
    """The diff with each step's wall time from a previous run and the cost of the reruns."""
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
