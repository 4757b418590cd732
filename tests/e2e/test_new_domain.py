"""A project started on a domain craft was not written for, run to its report.

The warehouse is built here (tests/e2e/payments_warehouse.py: 22 tables, string ids,
amounts in cents, dangling foreign keys); `craftc init --from` imports it and writes a
recipe sized to it, and `craftc run` of the scaffold's smoke profile finishes.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e_support import ROOT, craftc
from payments_warehouse import TABLES, build_payments_warehouse


@dataclass(frozen=True)
class Scaffold:
    work: Path
    project: Path
    ran_output: str
    ran_rc: int


GUIDE = ROOT / "docs" / "guides" / "your-own-warehouse.md"


def guide_commands() -> list[str]:
    """The lines of the guide's first `sh` block (the one marked as tried)."""
    text = GUIDE.read_text()
    block = text.split("<!-- tried: the test runs each line of this block -->", 1)[1]
    body = block.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in body.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def payments(tmp_path_factory) -> Scaffold:
    """The guide's commands, run in order on the payments warehouse."""
    work = tmp_path_factory.mktemp("payments")
    build_payments_warehouse(work / "warehouse.duckdb")
    cwd, last = work, None
    for line in guide_commands():
        if line.startswith("cd "):
            cwd = cwd / line[3:]
            continue
        assert line.startswith("craftc "), line
        last = craftc(*shlex.split(line)[1:], cwd=cwd)
        if not line.startswith("craftc run"):
            assert last.returncode == 0, (line, last.stdout[-2000:], last.stderr[-2000:])
    assert last is not None and line.startswith("craftc run")
    return Scaffold(work, work / "my_agent", last.stdout + last.stderr, last.returncode)


def test_the_warehouse_is_a_second_domain():
    assert len(TABLES) >= 20


def test_the_guide_links_are_in_place():
    assert "docs/guides/your-own-warehouse.md" in (ROOT / "README.md").read_text()
    assert "your-own-warehouse.md" in (ROOT / "docs/guides/train-on-your-warehouse.md").read_text()


def test_the_scaffold_of_a_payments_warehouse_runs_to_its_report(payments):
    assert payments.ran_rc == 0, payments.ran_output[-4000:]
    assert "internal error" not in payments.ran_output
    run = payments.project / "runs" / "my_agent"
    assert (run / "report" / "report.md").is_file()
    sft = json.loads((run / "sft" / "manifest.json").read_text())["metrics"]
    recipe = (payments.project / "recipes" / "my_agent.craft").read_text()
    max_length = int(re.search(r"max_length (\d+)", recipe).group(1))
    # the sizes the scaffold chose hold every stripped example the run trained on
    assert sft["craft_longest_example_tokens"] <= max_length
    assert "Sized to this schema" in recipe and "measured with the tokenizer the sft step trains" in recipe


def test_the_scaffold_sets_a_gate_timeout_sized_to_the_warehouse(payments):
    recipe = (payments.project / "recipes" / "my_agent.craft").read_text()
    assert "gate execution { reject error, syntax, timeout 2s }" in recipe
    assert "profile smoke {" in recipe


def _copy(payments: Scaffold, name: str) -> Path:
    dest = payments.work / name
    shutil.copytree(payments.project, dest, ignore=shutil.ignore_patterns("runs", "build"))
    return dest


def test_baseline_none_trains_no_stuffed_arm(payments):
    project = _copy(payments, "no_baseline")
    recipe = project / "recipes" / "my_agent.craft"
    text = recipe.read_text()
    edited = re.sub(r"(\n  eval \{[^}]*)\}", r"\1 baseline none }", text, count=1)
    assert "baseline none" in edited
    recipe.write_text(edited)
    assert craftc("compile", "recipes/my_agent.craft", "-o", "build/my_agent", "--profile", "smoke", cwd=project).returncode == 0
    ran = craftc("run", "build/my_agent", "--until", "sft", "--no-launch", cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    sft = project / "runs" / "my_agent" / "sft"
    assert (sft / "craft_config.json").is_file() and not (sft / "stuffed_config.json").exists()
    assert json.loads((sft / "manifest.json").read_text())["metrics"]["arms"] == ["craft"]


def test_examples_that_overflow_the_context_fail_at_check_with_a_located_code(payments):
    project = _copy(payments, "overflow")
    recipe = project / "recipes" / "my_agent.craft"
    text = re.sub(r"max_length \d+", "max_length 256", recipe.read_text())
    recipe.write_text(text)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "max_length 256" in row)
    checked = craftc("check", "recipes/my_agent.craft", cwd=project)
    assert checked.returncode == 1
    assert "error[E528]: stage `sft`: the prompt of every stripped example" in checked.stderr
    assert f"--> recipes/my_agent.craft:{line}:" in checked.stderr
