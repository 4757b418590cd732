"""The whole pipeline, end to end, on the ads recipe's `smoke` profile.

`smoke` is toy size (a 64-wide tiny_moe, a few optimiser steps), so the figures it
produces mean nothing; what this test pins down is that every step runs from a
compiled plan, writes what the run-dir contract promises, and that a binding-only
schema change (physical renames and table moves, `schema_specs/ads_v1_1.craft`)
reuses training and leaves what the trained agent does exactly as it was.

The run itself is the session's shared smoke run (e2e_support.py); tests that run a
step again do it on a copy.
"""

import json
import shutil
from pathlib import Path

from e2e_support import ROOT, STEPS, craftc, recipe_tree


def _episodes(run_dir: Path) -> dict:
    """What the agent did in eval: its text, its code's outcome and result size, per arm."""
    out = {}
    for path in sorted((run_dir / "eval/episodes").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        out[path.stem] = [(r["instance_id"], json.dumps(r["turns"], sort_keys=True)) for r in rows]
    return out


def test_every_step_completes_with_a_manifest(smoke_run):
    run_dir = smoke_run.run_dir
    for step in STEPS:
        manifest = json.loads((run_dir / step / "manifest.json").read_text())
        assert manifest["status"] == "complete" and manifest["step"] == step
        assert manifest["profile"] == "smoke" and manifest["outputs"]
    record = json.loads((run_dir / "run.json").read_text())
    assert [s["step"] for s in record["steps"]] == STEPS
    assert all(s["status"] == "ran" for s in record["steps"])


def test_the_run_dir_holds_the_funnel_masking_proof_and_report(smoke_run):
    run_dir = smoke_run.run_dir
    funnel = json.loads((run_dir / "gate/funnel.json").read_text())
    assert funnel["accepted"] > 0
    for arm in ("craft", "stuffed"):
        report = json.loads((run_dir / f"sft/{arm}/mask_report.json").read_text())
        trained = {role: counts["trainable"] for role, counts in report["per_role"].items()}
        assert trained["assistant"] > 0
        assert trained.get("tool", 0) == trained.get("system", 0) == trained.get("user", 0) == 0
        assert (run_dir / f"sft/{arm}/final/config.json").exists()
    report = json.loads((run_dir / "report/report.json").read_text())
    assert set(report["arms"]) == {"craft", "sft_only", "stuffed"}
    assert (run_dir / "report/report.md").read_text().count("|") > 10
    assert list((run_dir / "report").glob("*.png"))
    # eval.json names the decoding settings the plan moved from the IR's defaults, only those:
    # the recipe decodes with `copy_bias 2` in float32.
    decoded = json.loads((run_dir / "eval/eval.json").read_text())
    assert decoded["copy_bias"] == 2 and "precision" not in decoded
    # The smoke profile decodes 48 tokens a call, shorter than most answers it trained on: eval.json
    # says how many trained answers do not fit and how many calls were cut, and the report warns.
    assert decoded["max_new_tokens"] == 48 and decoded["answer_room"]["craft"]["longer"] > 0
    assert decoded["answer_room"]["craft"] == decoded["answer_room"]["sft_only"]
    assert all(decoded["cut_off"][arm]["cut_off"] > 0 for arm in ("craft", "stuffed"))
    assert any(w.startswith("in craft, ") and "stopped at max_new_tokens 48" in w for w in report["read_with_care"])


def test_the_stripped_prompt_costs_a_fraction_of_the_stuffed_one(smoke_run):
    run_dir = smoke_run.run_dir
    report = json.loads((run_dir / "report/report.json").read_text())
    row = next(r for r in report["tables"]["all"]["rows"] if r["metric"] == "input_tokens")
    tokens = {arm: row["arms"][arm]["value"] for arm in ("craft", "stuffed")}
    assert tokens["craft"] < 0.2 * tokens["stuffed"]


def test_a_binding_only_schema_change_reuses_training_and_keeps_the_agent_unchanged(smoke_run, tmp_path):
    before = _episodes(smoke_run.run_dir)
    run_dir = tmp_path / "run"
    shutil.copytree(smoke_run.run_dir, run_dir)
    recipe = recipe_tree(tmp_path / "v1_1", "ads_v1_1.craft")
    plan = tmp_path / "plan_v1_1"
    assert craftc("compile", recipe, "-o", plan, "--profile", "smoke", cwd=tmp_path).returncode == 0
    ran = craftc("run", plan, "--run-dir", run_dir, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    status = {s["step"]: s["status"] for s in json.loads((run_dir / "run.json").read_text())["steps"]}
    # eval reruns on the new warehouse; its outputs come out byte-identical, so even the
    # report, which reads only them, is reused.
    assert status == {"world": "ran", "distill": "reused", "gate": "reused", "dataset": "reused",
                      "sft": "reused", "grpo": "reused", "eval": "ran", "report": "reused"}
    # `craftc diff` said so before the run, from the same input hashing.
    predicted = json.loads(craftc("diff", smoke_run.plan, plan, "--format", "json", cwd=tmp_path).stdout)["reruns"]
    assert {r["step"]: "ran" if r["rerun"] else "reused" for r in predicted} == status
    # The warehouse file moved its tables and renamed its columns; what the agent sees and
    # does through the logical views is byte for byte the same.
    assert _episodes(run_dir) == before


def test_every_plan_file_outside_review_is_read_by_some_step(smoke_run):
    """The plan is the program: an artifact no step reads would be decorative."""
    plan, run_dir = smoke_run.plan, smoke_run.run_dir
    files = {p.relative_to(plan).as_posix() for p in plan.rglob("*") if p.is_file()}
    read = {f for step in STEPS for f in json.loads((run_dir / step / "manifest.json").read_text())["plan_files"]}
    assert {f for f in files if not f.startswith("review/")} - read == set()
    assert read <= files


def test_grpo_plays_fresh_rows_of_every_training_workflow_and_its_conversations(smoke_run):
    run_dir = smoke_run.run_dir
    summary = json.loads((run_dir / "grpo/grpo_summary.json").read_text())
    instances = json.loads((run_dir / "gate/instances.json").read_text())
    train = [i for i in instances if i["split"] == "train"]
    rows = json.loads((run_dir / "grpo/train_instances.json").read_text())
    audit = json.loads((run_dir / "grpo/rows_audit.json").read_text())
    # `rows fresh`: instances drawn for GRPO, none of them a training, dev or test turn.
    assert summary["rows_drawn"] == "fresh" and audit["overlapping_turns"] == {"sft": 0, "dev": 0, "test": 0}
    assert not {r["instance_id"] for r in rows} & {i["instance_id"] for i in instances}
    # Every row is a fresh instance (a conversation is one row, played on the policy's own turns).
    assert summary["history"] == "policy" and summary["rows"] == len(rows) == audit["instances"]
    # A workflow whose value groups the splits took all of gets none, and the audit says so.
    assert set(summary["rows_per_workflow"]) == set(audit["per_workflow"])
    assert set(summary["rows_per_workflow"]) | {w for w, n in audit["short"].items() if n == 0} \
        == {i["workflow"] for i in train}
    conversations = {i["workflow"] for i in rows if len(i["turns"]) > 1}
    assert conversations and all(summary["turns_per_workflow"][w] > summary["rows_per_workflow"][w]
                                 for w in conversations)
    # Measured on dev before and after; `dynamic_sampling 1` counted per step.
    assert summary["measured_on"] == "dev" and "greedy" in summary["change"]
    assert len(summary["dynamic_sampling"]["per_step"]) == summary["steps"]


def test_general_skill_eval_reports_each_trained_model_against_the_base(smoke_run, tmp_path):
    """`eval { general ... }` on the smoke run's base and trained models, with a local
    lm-eval task shipped in tests/eval/general_tasks (lm-eval's own YAML format)."""
    run_dir = tmp_path / "run"
    shutil.copytree(smoke_run.run_dir, run_dir)
    tasks = ROOT / "tests/eval/general_tasks"
    shutil.copytree(smoke_run.work / "v1", tmp_path / "v1")
    recipe = tmp_path / "v1/recipes/ads_analytics.craft"
    text = recipe.read_text().replace(
        "    eval { instances 1  max_turns 2  limit 3 }",
        # One held-out instance per split: what is tested is the general-skill part.
        f'    eval {{ instances 1  max_turns 2  limit 1  general craft_sums  general_include "{tasks}"  general_limit 12 }}',
        1)
    variant = recipe.with_name("ads_general.craft")
    variant.write_text(text)
    plan = tmp_path / "plan"
    assert craftc("compile", variant, "-o", plan, "--profile", "smoke", cwd=tmp_path).returncode == 0
    for step in ("eval", "report"):
        ran = craftc("run", plan, "--run-dir", run_dir, "--only", step, cwd=tmp_path)
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    general = json.loads((run_dir / "eval/eval.json").read_text())["general"]
    assert set(general["models"]) == {"base", "craft", "sft_only", "stuffed"}
    assert set(general["changes"]) == {"craft", "sft_only", "stuffed"}
    for change in general["changes"].values():
        c = change["craft_sums"]
        assert c["n"] == 12 and c["ci95"][0] <= c["delta"] <= c["ci95"][1]
    report = (run_dir / "report/report.md").read_text()
    assert "## General skills" in report and "| craft | craft_sums | acc |" in report
