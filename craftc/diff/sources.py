"""The two sides of a diff: a plan dir, a recipe compiled in memory, or a recipe at a git revision."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from craftc.ir import Plan

__all__ = ["DiffInputError", "CompileFailed", "PlanSide", "read_plan_dir", "load_side", "recipe_at_rev", "load_rev_side"]

# Files a recipe or schema spec names: `uses schema "..."` and `solution "..."`.
_REFERENCES = re.compile(r'\b(?:uses\s+schema|solution)\s+"([^"\n]+)"')


class DiffInputError(ValueError):
    """A side of the diff cannot be read; the message names it and the fix."""


class CompileFailed(Exception):
    """A recipe side did not compile; carries the diagnostics and sources to show."""

    def __init__(self, label: str, load) -> None:
        super().__init__(f"`{label}` does not compile")
        self.label, self.load = label, load


@dataclass(frozen=True)
class PlanSide:
    """One compiled plan: its ``plan.json`` object and every file, by relative path."""

    label: str
    plan: dict
    files: dict[str, bytes] = field(default_factory=dict)


def read_plan_dir(path: str | os.PathLike, label: str | None = None) -> PlanSide:
    """Read a compiled plan dir from disk."""
    root = Path(path)
    plan_file = root / "plan.json"
    if not plan_file.is_file():
        raise DiffInputError(f"`{root}` is not a plan dir (no plan.json); compile it with "
                             f"`craftc compile RECIPE -o {root}` or pass a .craft recipe")
    try:
        plan = json.loads(plan_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DiffInputError(f"`{plan_file}` is not valid JSON ({exc}); recompile the recipe") from None
    try:
        Plan.model_validate(plan)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise DiffInputError(f"`{plan_file}` is not a plan this craftc can read (at `{where}`: {first['msg']}); "
                             "recompile the recipe with this craftc") from None
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    return PlanSide(label or str(path), plan, files)


def _compile_side(recipe: Path, label: str, profile: str | None) -> PlanSide:
    from craftc.emit.compile import compile_recipe

    compiled = compile_recipe(recipe, profile)
    if not compiled.ok:
        raise CompileFailed(label, compiled.load)
    return PlanSide(label, json.loads(compiled.files["plan.json"]), compiled.files)


def load_side(arg: str, profile: str | None = None, label: str | None = None) -> PlanSide:
    """A plan dir as is, or a ``.craft`` recipe compiled in memory."""
    path = Path(arg)
    if path.is_dir():
        return read_plan_dir(path, label or arg)
    if path.is_file():
        return _compile_side(path, label or arg, profile)
    raise DiffInputError(f"`{arg}` does not exist; pass two plan dirs, two .craft recipes, "
                         "or one recipe with `--rev REV`")


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise DiffInputError("`git` is not installed; `--rev` needs it") from None


def _show(rev: str, repo_path: str, root: Path) -> bytes | None:
    done = _git(["show", f"{rev}:{repo_path}"], root)
    return done.stdout if done.returncode == 0 else None


def recipe_at_rev(recipe: str | os.PathLike, rev: str, workdir: Path) -> Path:
    """Write ``recipe`` and the files it names, as they were at ``rev``, under ``workdir``.

    Every referenced path (the schema, the solutions) is looked up relative to the
    recipe's directory and, failing that, relative to the repository root, mirroring
    the repository's layout so relative references keep working.

    Returns:
        The recipe's path inside ``workdir``.
    """
    recipe = Path(recipe).resolve()
    top = _git(["rev-parse", "--show-toplevel"], recipe.parent)
    if top.returncode != 0:
        raise DiffInputError(f"`{recipe}` is not inside a git repository, so `--rev` has nothing to read")
    root = Path(top.stdout.decode().strip()).resolve()
    if _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root).returncode != 0:
        raise DiffInputError(f"`{rev}` is not a revision of {root}; try `git log --oneline` for one")
    rel = recipe.relative_to(root).as_posix()
    text = _show(rev, rel, root)
    if text is None:
        raise DiffInputError(f"`{rel}` does not exist at revision `{rev}`")
    pending, seen = [(rel, text)], set()
    while pending:
        path, data = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        target = workdir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        for ref in _REFERENCES.findall(data.decode("utf-8", errors="replace")):
            for candidate in (os.path.normpath(os.path.join(os.path.dirname(path), ref)), os.path.normpath(ref)):
                content = _show(rev, candidate, root) if not candidate.startswith("..") else None
                if content is not None:
                    pending.append((candidate, content))
                    break
    return workdir / rel


def load_rev_side(recipe: str, rev: str, profile: str | None = None) -> PlanSide:
    """``recipe`` as it was at ``rev``, compiled in memory from a temporary checkout of its files."""
    with tempfile.TemporaryDirectory(prefix="craftc-rev-") as tmp:
        path = recipe_at_rev(recipe, rev, Path(tmp))
        return _compile_side(path, f"{recipe}@{rev}", profile)
