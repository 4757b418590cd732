"""The smoke profile end to end with `references hidden`: nothing downstream of the
teacher sees a reference solution, and the run still completes.

The gate decides by checks and agreement (and measures itself against the hidden
references in the funnel), the dataset and the stages train on what it accepted, and
GRPO's R_outcome is the share of checks passed on every row.
"""

import json
import re
import shutil

import pytest
from e2e_support import ROOT, STEPS, craftc


@pytest.fixture(scope="module")
def hidden_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("hidden")
    (work / "recipes").mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    shutil.copytree(ROOT / "schema_specs", work / "schema_specs")
    text = (ROOT / "recipes/ads_analytics.craft").read_text()
    text, n = re.subn(r"^  seed (\d+)$", "  seed \\1\n  references hidden", text, flags=re.M)
    assert n == 1
    # The agreement share the recipe's references_hidden profile sets.
    text, n = re.subn(r"^  gate output    \{ reject empty, incomplete, mismatch \}$",
                      "  gate output    { reject empty, incomplete, mismatch  agree 50% }", text, flags=re.M)
    assert n == 1
    recipe = work / "recipes/ads_analytics.craft"
    recipe.write_text(text)
    plan, run_dir = work / "plan", work / "run"
    compiled = craftc("compile", recipe, "-o", plan, "--profile", "smoke", cwd=work)
    assert compiled.returncode == 0, compiled.stderr
    ran = craftc("run", plan, "--run-dir", run_dir, cwd=work)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return plan, run_dir


def test_every_step_completes(hidden_run):
    _, run_dir = hidden_run
    for step in STEPS:
        assert (run_dir / step / "manifest.json").is_file(), step


def test_instances_hold_no_reference_comparison(hidden_run):
    _, run_dir = hidden_run
    instances = json.loads((run_dir / "gate/instances.json").read_text())
    turns = [t for i in instances for t in i["turns"]]
    assert turns and not any(t["reference_visible"] for t in turns)
    assert not any(e["kind"] == "same_rows_as_solution" for t in turns for e in t["expectations"])


def test_the_funnel_counts_agreement_and_measures_against_the_hidden_references(hidden_run):
    _, run_dir = hidden_run
    funnel = json.loads((run_dir / "gate/funnel.json").read_text())
    agreement = funnel["agreement"]
    assert agreement["instance_turns"] == agreement["agreed"] + agreement["set_aside"] > 0
    oracle = funnel["oracle"]
    kinds = {row["kind"] for row in oracle["rows"]}
    assert {"clean", "all"} <= kinds and len(kinds) > 3
    assert oracle["precision"] >= 0.9
    assert "## Reference-free acceptance against the hidden references" in (run_dir / "gate/funnel.md").read_text()


def test_grpo_outcome_comes_from_checks_on_every_row(hidden_run):
    _, run_dir = hidden_run
    summaries = list((run_dir / "grpo").rglob("grpo_summary.json"))
    assert summaries, "grpo wrote no summary"
    judged = json.loads(summaries[0].read_text())["outcome_judged_by"]
    assert judged["reference"] == 0 and judged["checks"] > 0
