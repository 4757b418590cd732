"""Training data a run loses is a warning naming the workflow, the turn, the reason and
the fix (or an error with `on_loss error`), never only a line in funnel.json.

fixtures/lossy/lossy.craft has three workflows: `spend_by_advertiser` is healthy,
`industry_rank`'s reference raises a KeyError, and `keyword_advertisers`' reference
plan says "matched a keyword", so the plan_code judge rejects every candidate that
follows it.
"""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from distill_support import FIXTURES, SEED, compile_with_world


def _step(plan, plan_dir, run_dir, name, console):
    from runtime.distill import step
    from runtime.step_context import StepContext

    out = run_dir / f".{name}.partial"
    out.mkdir(parents=True)
    result = getattr(step, f"run_{name}")(StepContext(plan, plan_dir, run_dir, out, console, SEED))
    out.rename(run_dir / name)
    (run_dir / name / "manifest.json").write_text(json.dumps({"metrics": result.metrics}, default=str))
    return result


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    """(plan, plan_dir, run_dir, console text per step, step results) after distill, gate, dataset."""
    plan, plan_dir, run_dir = compile_with_world(FIXTURES / "lossy/lossy.craft", tmp_path_factory.mktemp("lossy"))
    texts, results = {}, {}
    for name in ("distill", "gate", "dataset"):
        buffer = io.StringIO()
        results[name] = _step(plan, plan_dir, run_dir, name, Console(file=buffer, width=400))
        texts[name] = buffer.getvalue()
    return plan, plan_dir, run_dir, texts, results


def test_a_reference_that_raises_is_a_warning_naming_workflow_turn_reason_and_fix(lossy):
    _, _, run_dir, texts, _ = lossy
    line = next(ln for ln in texts["gate"].splitlines() if "`industry_rank` turn 1" in ln)
    assert line.startswith("warning: gate: workflow `industry_rank` turn 1: reference skipped on ")
    assert "KeyError" in line
    assert "fix: fix the reference solution (plan dir `solutions/industry_rank/1.py`)" in line
    assert "craftc check --preflight RECIPE" in line
    markdown = (run_dir / "gate/funnel.md").read_text()
    assert "## Warnings" in markdown and "**workflow `industry_rank` turn 1**: reference skipped on" in markdown


def test_a_workflow_whose_clean_candidates_a_judge_rejects_is_a_warning(lossy):
    _, _, run_dir, texts, _ = lossy
    assert "warning: gate: workflow `keyword_advertisers`: 0 of " in texts["gate"]
    assert "candidates accepted (rejected by judge plan_code " in texts["gate"]
    assert "the plan names keywords but the code never reads `keyword`" in texts["gate"]
    funnel = json.loads((run_dir / "gate/funnel.json").read_text())
    lost = {(loss["workflow"], loss["turn"]) for loss in funnel["losses"]}
    assert lost == {("industry_rank", 1), ("industry_rank", None), ("keyword_advertisers", None)}


def test_the_dataset_line_and_manifest_agree_on_workflow_counts(lossy):
    _, _, _, texts, results = lossy
    metrics = results["dataset"].metrics
    assert (metrics["workflows"], metrics["train_workflows"]) == (1, 3)
    assert metrics["workflows_without_examples"] == ["industry_rank", "keyword_advertisers"]
    assert f"dataset: {metrics['examples']} examples per mode from 1 of 3 train workflows" in texts["dataset"]
    assert "warning: dataset: workflow `keyword_advertisers`: 0 examples in the dataset" in texts["dataset"]
    assert len(metrics["warnings"]) == 2


@pytest.mark.parametrize("step", ["gate", "dataset"])
def test_on_loss_error_fails_the_step_with_the_same_text(lossy, tmp_path, step):
    import shutil

    from runtime.step_context import StepError

    plan, plan_dir, run_dir, _, _ = lossy
    strict = plan.model_copy(update={"recipe": plan.recipe.model_copy(update={"on_loss": "error"})})
    rerun = tmp_path / "run"
    upstream = {"gate": ("world", "distill"), "dataset": ("world", "distill", "gate")}[step]
    for name in upstream:
        shutil.copytree(run_dir / name, rerun / name)
    with pytest.raises(StepError) as failed:
        _step(strict, plan_dir, rerun, step, Console(file=io.StringIO()))
    message = str(failed.value)
    assert message.startswith(f"{step}: ") and "the recipe sets `on_loss error`" in message
    assert "workflow `keyword_advertisers`" in message
    assert "set `on_loss warn` in the recipe to train without them" in message
