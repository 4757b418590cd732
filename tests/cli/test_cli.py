"""The craftc command line: what users and CI scripts rely on (exit codes, streams, files)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from craftc.cli import main

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "examples" / "hello"
COMPLETE = REPO / "examples" / "complete" / "complete.craft"


def craftc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real console entry point in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "craftc.cli", *args], cwd=cwd or REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_help_lists_every_subcommand_and_version_prints():
    done = craftc("--help")
    assert done.returncode == 0
    for command in ("compile", "check", "diff", "fmt", "explain", "run"):
        assert command in done.stdout
    assert craftc("--version").stdout.strip().startswith("craftc ")


def test_compile_and_check_never_import_torch_or_pandas():
    code = ("import sys; from craftc.cli import main; main(['check', 'examples/hello/hello.craft']); "
            "print(sorted(m for m in ('torch', 'pandas', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_compile_without_arguments_builds_every_recipe_under_recipes(tmp_path):
    shutil.copytree(HELLO, tmp_path / "recipes")
    done = craftc("compile", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "build" / "hello" / "plan.json").is_file()
    assert "compiled recipes/hello.craft -> build/hello" in done.stdout


def test_compiling_from_two_working_dirs_gives_identical_bytes(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    first = craftc("compile", str(COMPLETE), "-o", str(tmp_path / "a"), cwd=REPO)
    second = craftc("compile", os.path.relpath(COMPLETE, tmp_path / "elsewhere"), "-o", "../b",
                    cwd=tmp_path / "elsewhere")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_a_missing_recipe_is_one_clear_error_without_traceback(tmp_path):
    done = craftc("compile", "no/such.craft", "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "no/such.craft" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_check_reports_errors_as_json_and_exits_1(tmp_path, capsys):
    bad = tmp_path / "bad.craft"
    bad.write_text((HELLO / "hello.craft").read_text().replace("uses  Product", "uses  Prodcut"))
    shutil.copy(HELLO / "schema.craft", tmp_path / "schema.craft")
    assert main(["check", str(bad), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report[0]["ok"] is False
    assert any("Prodcut" in d["message"] for d in report[0]["diagnostics"])


def test_diff_exit_codes_same_different_error(tmp_path, capsys):
    hello = str(HELLO / "hello.craft")
    assert main(["compile", hello, "-o", str(tmp_path / "a")]) == 0
    assert main(["compile", hello, "-o", str(tmp_path / "b")]) == 0
    assert main(["compile", str(COMPLETE), "-o", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "Plan: 0 to add, 0 to change, 0 to remove." in capsys.readouterr().out
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "c")]) == 2
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err


def _changed_keys(diff: dict) -> set[tuple[str, str]]:
    return {(r["address"], a["key"]) for r in diff["resources"] for a in r["attributes"]}


def test_profile_diff_shows_exactly_the_overridden_settings(tmp_path, capsys):
    assert main(["compile", str(COMPLETE), "-o", str(tmp_path / "default")]) == 0
    assert main(["compile", str(COMPLETE), "--profile", "cluster", "-o", str(tmp_path / "cluster")]) == 0
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "default"), str(tmp_path / "cluster"), "--format", "json"]) == 2
    diff = json.loads(capsys.readouterr().out)
    # profile cluster { seed 11 (same as the default: no change)
    #   teacher synthetic { candidates 16 }
    #   stage sft  { parallel zero3  gpus 8  nodes 2  mixed_precision bf16  batch 256  per_device_batch 2 }
    #   stage grpo { parallel fsdp2  gpus 8  mixed_precision bf16  rollout vllm, server  group 8  batch 64
    #                per_device_batch 4 }   (per_device_batch 4 is the default's value too)
    #   eval { instances 8  general ifeval, gsm8k  general_limit 500 } }
    assert _changed_keys(diff) == {
        ("recipe", "profile"), ("teacher", "candidates"),
        *(("stage.sft", k) for k in ("parallel", "gpus", "nodes", "mixed_precision", "batch", "per_device_batch")),
        *(("stage.grpo", k) for k in ("parallel", "gpus", "mixed_precision", "rollout", "vllm_mode", "group",
                                      "batch")),
        # general_include comes into the plan with the benchmarks that read it (at its default).
        ("eval", "instances"), ("eval", "general"), ("eval", "general_limit"), ("eval", "general_include"),
    }
    assert diff["plan"] == "Plan: 0 to add, 5 to change, 0 to remove."


def test_diff_of_two_recipes_compiles_both_in_memory(tmp_path, capsys):
    assert main(["diff", str(HELLO / "hello.craft"), str(COMPLETE)]) == 2
    out = capsys.readouterr().out
    assert "  + workflow revenue_by_tier {" in out and "  - workflow priciest_products { 1 param, 1 turn }" in out
    assert out.rstrip().splitlines()[-1].startswith("Plan: ")
    assert list(tmp_path.iterdir()) == []


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


def test_diff_against_a_git_revision_shows_a_schema_edit_and_its_impact(tmp_path, capsys, monkeypatch):
    repo = tmp_path / "repo"
    shutil.copytree(HELLO, repo / "hello")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "hello")
    schema = repo / "hello" / "schema.craft"
    schema.write_text(schema.read_text().replace('"shop.products"', '"shop.products_v2"'))
    monkeypatch.chdir(repo)
    assert main(["diff", "hello/hello.craft", "--rev", "HEAD"]) == 2
    out = capsys.readouterr().out
    assert '  ~ entity Product { ~ table "shop.products" -> "shop.products_v2" }' in out
    assert "Retrain: no (sft and grpo are reused)" in out
    assert "Plan: 0 to add, 1 to change, 0 to remove." in out
    assert main(["diff", "hello/hello.craft", "--rev", "HEAD", "--full"]) == 2
    out = capsys.readouterr().out
    assert '~ table: "shop.products" -> "shop.products_v2"' in out
    assert "entity.Product touches:" in out and "priciest_products" in out
    assert main(["diff", "hello/hello.craft", "--rev", "no-such-rev"]) == 1
    assert "not a revision" in capsys.readouterr().err


def test_explain_documents_known_codes_and_rejects_unknown_ones(capsys):
    assert main(["explain", "E102"]) == 0
    assert capsys.readouterr().out.startswith("E102:")
    assert main(["explain", "E999"]) == 1


def test_explain_documents_a_setting_from_its_ir_declaration(capsys):
    assert main(["explain", "stage.warmup"]) == 0
    assert capsys.readouterr().out == (
        "stage.warmup: share of the optimiser steps with a linear learning-rate warm-up\n"
        "  type: percent or fraction (`20%`, `0.2`)\n  default: 0%\n  range: >= 0, <= 0.5\n"
        "  declared: StageBase.warmup in craftc/ir.py\n")
    assert main(["explain", "timeout"]) == 0      # a bare key: every block that has it
    out = capsys.readouterr().out
    assert "teacher.timeout:" in out and "gate.execution.timeout:" in out


def test_fmt_check_reports_unformatted_files_and_fmt_fixes_them(tmp_path, capsys):
    messy = tmp_path / "schema.craft"
    messy.write_text((HELLO / "schema.craft").read_text().replace("    field name", "field   name"))
    assert main(["fmt", "--check", str(messy)]) == 1
    assert main(["fmt", str(messy)]) == 0
    assert main(["fmt", "--check", str(messy)]) == 0


def test_run_names_a_missing_plan_dir_and_exits_1(tmp_path):
    done = craftc("run", str(tmp_path / "nowhere"), "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 1
    assert "nowhere" in done.stderr and "Traceback" not in done.stderr


def test_a_corrupt_plan_dir_is_named_with_the_fix(tmp_path):
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / "plan.json").write_text('{"recipe": {"schema": 3}}')
    done = craftc("diff", str(plan), str(plan))
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "recompile the recipe" in done.stderr
    assert "Traceback" not in done.stderr
