"""Every valid .craft file in the repository, and the docs' examples, are in `craftc fmt` form;
formatting never changes a plan, and `fmt --check` shows what it would change as a diff."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler_support import MALFORMED, ROOT
from craftc.fmt import FormatError, format_source

SKIP_DIRS = {".git", ".venv", "build", "runs", "node_modules"}
# `craftc import`'s expected outputs are written as the importer writes them (one space
# between words); the user formats an imported spec when adopting it.
IMPORT_GOLDENS = ROOT / "tests" / "importer" / "fixtures"
VALID = sorted(p for p in ROOT.rglob("*.craft")
               if not SKIP_DIRS & set(p.relative_to(ROOT).parts) and MALFORMED not in p.parents
               and not (IMPORT_GOLDENS in p.parents and p.name.endswith(".expected.craft")))
# The repository's own recipes (test fixtures reach outside the copied tree).
RECIPES = [p for p in VALID if re.search(r"^recipe ", p.read_text(), re.M)
           and "tests" not in p.relative_to(ROOT).parts]


def craftc(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_fmt_check_passes_on_every_valid_craft_file_in_the_repository():
    assert len(VALID) >= 15
    done = craftc("fmt", "--check", *VALID)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_craft_examples_in_readme_and_language_docs_are_in_fmt_form():
    checked = 0
    for doc in (ROOT / "README.md", ROOT / "docs/language.md"):
        for block in re.findall(r"```\w*\n(.*?)```", doc.read_text(), re.S):
            body = block.replace("  ...blocks...\n", "")
            if not re.match(r"(#.*\n)*(recipe|schema) ", body):
                continue
            try:
                assert format_source(body) == body, (doc.name, body[:80])
            except FormatError:
                continue
            checked += 1
    assert checked >= 4


def test_fmt_check_prints_a_unified_diff_and_changes_nothing(tmp_path):
    messy = tmp_path / "messy.craft"
    messy.write_text('recipe r {\n  seed 7\n  stage sft {epochs 3   lr 3e-4}\n}\n')
    before = messy.read_text()
    done = craftc("fmt", "--check", messy, cwd=tmp_path)
    assert done.returncode == 1 and messy.read_text() == before
    assert done.stdout.splitlines()[:3] == [f"would reformat {messy}", f"--- {messy.as_posix()}",
                                            f"+++ {messy.as_posix()} (formatted)"]
    assert "-  stage sft {epochs 3   lr 3e-4}\n+  stage sft { epochs 3  lr 3e-4 }\n" in done.stdout


def _unformat(text: str) -> str:
    """The same recipe, laid out carelessly: no alignment, turns on one line, extra spaces."""
    text = re.sub(r"^(\s*)(doc|ask|key|ref|uses)\s+", r"\1\2 ", text, flags=re.M)
    text = re.sub(r"\n\s+(or|solution|expect) ", r" \1 ", text)
    text = re.sub(r"(stage|gate) (\w+)\s+\{", r"\1 \2 {", text)
    lines = []
    for line in text.splitlines():
        code, hash_, comment = line.partition("#")     # comments are kept as written
        indent = len(code) - len(code.lstrip())
        lines.append(code[:indent] + code[indent:].replace("  ", "   ") + hash_ + comment)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_formatting_does_not_change_the_plan(recipe, tmp_path):
    from craftc.emit.compile import compile_recipe

    for part in ("recipes", "schema_specs", "examples"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("*.duckdb", "*.wal"))
    copy = tmp_path / recipe.relative_to(ROOT)
    original = compile_recipe(copy).files["plan.json"]
    copy.write_text(_unformat(recipe.read_text()))
    messy = compile_recipe(copy)
    assert messy.ok, messy.load.render()
    formatted = format_source(copy.read_text())
    assert format_source(formatted) == formatted
    assert formatted == recipe.read_text()
    copy.write_text(formatted)
    assert compile_recipe(copy).files["plan.json"] == messy.files["plan.json"] == original
