"""The runner's contract: manifests, reuse, resume, atomic steps, stale plans.

The steps here are small test functions registered in place of the real ones, so
these tests pin down the runner's own behaviour independent of what the steps do.
"""

import json
from pathlib import Path

import pytest
from rich.console import Console

from craftc.ir import Entity, EntityField, EntityKey, FieldType, Plan, Recipe, Schema
from runtime import cpu_share, runner
from runtime.plan import plan_content_hash
from runtime.step_context import StepResult

CALLS: list[str] = []


def _world(ctx):
    CALLS.append("world")
    (ctx.out_dir / "warehouse.txt").write_text("rows")
    return StepResult(metrics={"logical_data_hash": "L1"})


def _distill(ctx):
    CALLS.append("distill")
    assert (ctx.input_dir("world") / "warehouse.txt").exists()
    (ctx.out_dir / "candidates.txt").write_text("c")
    return StepResult(metrics={"candidates": 1})


def _boom(ctx):
    (ctx.out_dir / "half.txt").write_text("half-written")
    raise KeyboardInterrupt


def _schema(column: str) -> Schema:
    return Schema(name="s", version=1, source="s.craft", entities=(
        Entity(name="Campaign", table="adw.cmp", view="campaign",
               key=EntityKey(name="id", column="cmp_id"),
               fields=(EntityField(name="name", type=FieldType(kind="string"), column=column),)),
    ))


def write_plan(plan_dir: Path, column: str = "cmp_nm", seed: int = 0) -> Path:
    plan_dir.mkdir(parents=True, exist_ok=True)
    plan = Plan(craftc_version="test", recipe=Recipe(name="r", schema=_schema(column), seed=seed))
    data = plan.model_dump(mode="json", by_alias=True)
    data["content_hash"] = plan_content_hash(data)
    (plan_dir / "plan.json").write_text(json.dumps(data, sort_keys=True, indent=2))
    return plan_dir


@pytest.fixture(autouse=True)
def fake_steps(monkeypatch):
    CALLS.clear()
    monkeypatch.setattr(runner, "STEP_FUNCTIONS", {
        **runner.STEP_FUNCTIONS,
        "world": f"{__name__}:_world",
        "distill": f"{__name__}:_distill",
    })


def run(plan_dir, run_dir, **kw):
    return runner.run_plan(plan_dir, run_dir, console=Console(file=open("/dev/null", "w")), **kw)


def test_each_step_writes_a_manifest_with_inputs_outputs_and_versions(tmp_path):
    plan_dir = write_plan(tmp_path / "plan")
    assert run(plan_dir, tmp_path / "run", until="distill") == 0
    manifest = json.loads((tmp_path / "run/world/manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["outputs"][0]["path"] == "warehouse.txt"
    assert manifest["metrics"] == {"logical_data_hash": "L1"}
    assert "duckdb" in manifest["versions"] and manifest["inputs_hash"]
    assert CALLS == ["world", "distill"]


def test_a_rerun_with_unchanged_inputs_reuses_every_step(tmp_path):
    plan_dir = write_plan(tmp_path / "plan")
    run(plan_dir, tmp_path / "run", until="distill")
    CALLS.clear()
    assert run(plan_dir, tmp_path / "run", until="distill") == 0
    assert CALLS == []
    record = json.loads((tmp_path / "run/run.json").read_text())
    assert [s["status"] for s in record["steps"]] == ["reused", "reused"]


def test_a_physical_rename_rebuilds_the_world_but_reuses_distillation(tmp_path):
    run(write_plan(tmp_path / "plan"), tmp_path / "run", until="distill")
    CALLS.clear()
    renamed = write_plan(tmp_path / "plan2", column="campaign_name")
    assert run(renamed, tmp_path / "run", until="distill") == 0
    # the world step reports the same logical data hash, so distill is reused
    assert CALLS == ["world"]


def test_an_interrupted_step_leaves_nothing_half_written_and_the_rerun_resumes(tmp_path, monkeypatch):
    plan_dir = write_plan(tmp_path / "plan")
    monkeypatch.setitem(runner.STEP_FUNCTIONS, "distill", f"{__name__}:_boom")
    assert run(plan_dir, tmp_path / "run", until="distill") == 130
    assert (tmp_path / "run/world/manifest.json").exists()
    assert not (tmp_path / "run/distill").exists()
    monkeypatch.setitem(runner.STEP_FUNCTIONS, "distill", f"{__name__}:_distill")
    CALLS.clear()
    assert run(plan_dir, tmp_path / "run", until="distill") == 0
    assert CALLS == ["distill"]


def test_a_corrupt_manifest_is_kept_aside_and_the_step_rebuilt(tmp_path):
    plan_dir = write_plan(tmp_path / "plan")
    run(plan_dir, tmp_path / "run", only="world")
    (tmp_path / "run/world/manifest.json").write_text("{not json")
    CALLS.clear()
    assert run(plan_dir, tmp_path / "run", only="world") == 0
    assert CALLS == ["world"]
    assert (tmp_path / "run/world.corrupt-1/warehouse.txt").read_text() == "rows"


def test_a_step_whose_upstream_is_missing_says_which_command_to_run(tmp_path, capsys):
    plan_dir = write_plan(tmp_path / "plan")
    console = Console(file=open(tmp_path / "out.txt", "w"), width=200)
    assert runner.run_plan(plan_dir, tmp_path / "run", only="distill", console=console) == 1
    console.file.close()
    text = (tmp_path / "out.txt").read_text()
    assert "needs the output of `world`" in text and "--until world" in text


def test_a_hand_edited_plan_is_refused(tmp_path):
    plan_dir = write_plan(tmp_path / "plan")
    data = json.loads((plan_dir / "plan.json").read_text())
    data["recipe"]["seed"] = 99
    (plan_dir / "plan.json").write_text(json.dumps(data))
    console = Console(file=open(tmp_path / "out.txt", "w"), width=200)
    assert runner.run_plan(plan_dir, tmp_path / "run", console=console) == 1
    console.file.close()
    assert "modified after compilation" in (tmp_path / "out.txt").read_text()


def test_step_selection_follows_the_fixed_order():
    assert runner.select_steps(from_step="sft", until="eval") == ("sft", "grpo", "eval")
    assert runner.select_steps(only="gate") == ("gate",)
    with pytest.raises(runner.StepError, match="unknown step `trian`"):
        runner.select_steps(only="trian")


def _plan_with(recipe_updates: dict, stage_updates: dict[str, dict]) -> Plan:
    from craftc.ir import GRPOStage, SFTStage

    stages = (SFTStage(name="sft", base="tiny_moe"), GRPOStage(name="grpo", after="sft", base="tiny_moe"))
    stages = tuple(s.model_copy(update=stage_updates.get(s.name, {})) for s in stages)
    recipe = Recipe(name="r", schema=_schema("cmp_nm"), stages=stages, **recipe_updates)
    artifacts = {f"stages/{s.name}/trl_config.json": f"lr={s.lr}" for s in stages}
    return Plan(craftc_version="test", recipe=recipe, artifacts=artifacts)


def test_sft_reads_its_own_stage_and_the_baseline_budget_but_not_grpo(tmp_path):
    from craftc.ir import EvalSpec

    base = runner.step_inputs_hash("sft", _plan_with({}, {}), tmp_path)
    assert runner.step_inputs_hash("sft", _plan_with({}, {"grpo": {"lr": 3e-5}}), tmp_path) == base
    assert runner.step_inputs_hash("sft", _plan_with({}, {"sft": {"lr": 2e-3}}), tmp_path) != base
    steps_budget = _plan_with({"eval": EvalSpec(baseline_budget="steps")}, {})
    assert runner.step_inputs_hash("sft", steps_budget, tmp_path) != base


def test_eval_settings_that_only_choose_how_eval_scores_rerun_eval_alone(tmp_path):
    """The decoding and scope settings (copy_bias, precision, repeat_temperature; split, limit, batch,
    processes) are read by eval only: the data and training steps keep their inputs."""
    from craftc.ir import EVAL_DECODING, EVAL_SCOPE, EvalSpec

    assert set(EVAL_DECODING + EVAL_SCOPE) <= set(EvalSpec.model_fields), "each names an eval setting"

    steps = ("distill", "dataset", "sft", "grpo")
    base = _plan_with({"eval": EvalSpec()}, {})
    before = {step: runner.step_inputs_hash(step, base, tmp_path) for step in (*steps, "eval")}
    for change in ({"limit": 16}, {"split": "dev"}, {"batch": 32}, {"copy_bias": 2.0}, {"precision": "bf16"},
                   {"repeat_temperature": 0.7}, {"processes": 2}):
        plan = _plan_with({"eval": EvalSpec(**change)}, {})
        assert {s: runner.step_inputs_hash(s, plan, tmp_path) for s in steps} == {s: before[s] for s in steps}, change
        assert runner.step_inputs_hash("eval", plan, tmp_path) != before["eval"], change
    # Which instances are held out is a data input.
    held = _plan_with({"eval": EvalSpec(instances=2)}, {})
    assert runner.step_inputs_hash("distill", held, tmp_path) != before["distill"]


def _warned(ctx):
    CALLS.append("distill")
    return StepResult(metrics={"warnings": ["workflow `w`: 0 of 4 candidates accepted"]})


def test_a_step_with_warnings_does_not_end_with_a_plain_done(tmp_path, monkeypatch):
    import io

    monkeypatch.setitem(runner.STEP_FUNCTIONS, "distill", f"{__name__}:_warned")
    out = io.StringIO()
    assert runner.run_plan(write_plan(tmp_path / "plan"), tmp_path / "run", until="distill",
                           console=Console(file=out, width=200)) == 0
    text = out.getvalue()
    assert "✓ world: done in" in text
    assert "! distill: done in" in text and "with 1 warning(s) (above, and under `warnings` in its manifest)" in text


# ---------------------------------------------------------------- craftc run --replicates N

SEEDS: list[tuple[str, int, int]] = []


def _recorder(name):
    def step(ctx):
        SEEDS.append((name, ctx.replicate, ctx.seed))
        for up in runner.UPSTREAM[name]:
            ctx.input_dir(up)                       # every input step is there, linked or own
        (ctx.out_dir / f"{name}.txt").write_text(f"{name} seed {ctx.seed}")
        return StepResult(metrics={"seed": ctx.seed, "replicates": ctx.replicates})
    return step


for _name in runner.STEPS:
    globals()[f"_record_{_name}"] = _recorder(_name)


@pytest.fixture()
def recorded_steps(monkeypatch):
    SEEDS.clear()
    monkeypatch.setattr(runner, "STEP_FUNCTIONS", {name: f"{__name__}:_record_{name}" for name in runner.STEPS})


def test_replicates_train_and_evaluate_again_on_the_same_data_then_report_once(tmp_path, recorded_steps):
    plan_dir = write_plan(tmp_path / "plan")
    run_dir = tmp_path / "run"
    assert run(plan_dir, run_dir, replicates=3) == 0
    steps = [(name, replicate) for name, replicate, _ in SEEDS]
    data = [(s, 0) for s in ("world", "distill", "gate", "dataset")]
    trained = [(s, r) for r in range(3) for s in ("sft", "grpo", "eval")]
    assert steps == data + trained + [("report", 0)]
    seeds = {replicate: seed for name, replicate, seed in SEEDS if name == "sft"}
    assert seeds[0] == 0 and len(set(seeds.values())) == 3          # replicate 0 is the recipe's seed
    for r in (1, 2):
        shared = run_dir / "replicates" / f"r{r}"
        assert (shared / "dataset").is_symlink() and (shared / "dataset").resolve() == (run_dir / "dataset").resolve()
        assert (shared / "eval" / "eval.txt").read_text() == f"eval seed {seeds[r]}"
        assert json.loads((shared / "sft" / "manifest.json").read_text())["seed"] == seeds[r]
    assert json.loads((run_dir / "report" / "manifest.json").read_text())["metrics"]["replicates"] == 3
    # a rerun reuses everything; a lost replicate step is rebuilt alone (its same bytes leave the report as it was)
    SEEDS.clear()
    assert run(plan_dir, run_dir, replicates=3) == 0
    assert SEEDS == []
    import shutil
    shutil.rmtree(run_dir / "replicates" / "r2" / "eval")
    assert run(plan_dir, run_dir, replicates=3) == 0
    assert [(name, r) for name, r, _ in SEEDS] == [("eval", 2)]
    # a report without the replicates is another report
    SEEDS.clear()
    assert run(plan_dir, run_dir, only="report") == 0
    assert [(name, r) for name, r, _ in SEEDS] == [("report", 0)]


def test_replicates_below_one_are_refused(tmp_path, recorded_steps):
    plan_dir = write_plan(tmp_path / "plan")
    console_file = tmp_path / "console.txt"
    code = runner.run_plan(plan_dir, tmp_path / "run", replicates=0, console=Console(file=open(console_file, "w")))
    assert code == 1 and "--replicates 0: give 1 or more" in console_file.read_text()


SFT_RUNS: list[str] = []


def _sft_checkpointing(ctx):
    """A training step that checkpoints into its out dir and stops once, as a kill would."""
    checkpoint = ctx.out_dir / "checkpoint-1"
    if not checkpoint.exists():
        checkpoint.write_text("weights after step 1")
        # A write_atomic cut off by the kill leaves its hidden temporary behind.
        (ctx.out_dir / ".metrics.jsonl.0a1b2c3d.tmp").write_text('{"loss": 1.')
        SFT_RUNS.append("from scratch")
        raise KeyboardInterrupt
    SFT_RUNS.append("resumed")
    (ctx.out_dir / "final.txt").write_text("trained")
    return StepResult(metrics={})


def test_an_interrupted_training_step_resumes_from_its_checkpoints(tmp_path, recorded_steps, monkeypatch):
    SFT_RUNS.clear()
    monkeypatch.setitem(runner.STEP_FUNCTIONS, "sft", f"{__name__}:_sft_checkpointing")
    plan_dir, run_dir = write_plan(tmp_path / "plan"), tmp_path / "run"
    assert run(plan_dir, run_dir, until="sft") == 130
    assert (run_dir / ".tmp-sft/checkpoint-1").is_file() and not (run_dir / "sft").exists()
    assert run(plan_dir, run_dir, until="sft") == 0
    assert SFT_RUNS == ["from scratch", "resumed"]
    manifest = json.loads((run_dir / "sft/manifest.json").read_text())
    assert sorted(f["path"] for f in manifest["outputs"]) == ["checkpoint-1", "final.txt"]   # no resume marker


def test_an_interrupted_training_step_with_other_inputs_starts_over(tmp_path, recorded_steps, monkeypatch):
    SFT_RUNS.clear()
    monkeypatch.setitem(runner.STEP_FUNCTIONS, "sft", f"{__name__}:_sft_checkpointing")
    run_dir = tmp_path / "run"
    assert run(write_plan(tmp_path / "plan"), run_dir, until="sft") == 130
    # Another seed: the checkpoint was trained on other data and is thrown away.
    assert run(write_plan(tmp_path / "plan2", seed=1), run_dir, until="sft") == 130
    assert SFT_RUNS == ["from scratch", "from scratch"]


OTHER_WORK: list = []


def _world_beside_other_work(ctx):
    # Other work on the machine: a process this step starts and leaves running. A child's CPU
    # time is the step's own only once it has ended and been waited for, which this one is not.
    import subprocess
    import sys
    import time

    burn = "import time\nend = time.time() + 1.5\nwhile time.time() < end:\n    pass\n"
    OTHER_WORK.append(subprocess.Popen([sys.executable, "-c", burn]))
    time.sleep(1.5)
    return _world(ctx)


def test_each_manifest_says_what_other_processes_took_of_the_cpu(tmp_path):
    run(write_plan(tmp_path / "plan"), tmp_path / "run", only="world")
    share = json.loads((tmp_path / "run/world/manifest.json").read_text())["other_cpu_share"]
    assert 0.0 <= share <= 1.0


def test_a_step_run_beside_other_work_says_its_time_is_not_its_cost(tmp_path, monkeypatch):
    import os

    cores = os.cpu_count() or 1
    monkeypatch.setitem(runner.STEP_FUNCTIONS, "world", f"{__name__}:_world_beside_other_work")
    monkeypatch.setattr(cpu_share, "MIN_WALL_S", 0.0)              # the real floor is 10 s
    monkeypatch.setattr(cpu_share, "BUSY_SHARE", 0.4 / cores)     # one busy core on a machine of any size
    console = Console(file=open(tmp_path / "out.txt", "w"), width=200)
    try:
        assert runner.run_plan(write_plan(tmp_path / "plan"), tmp_path / "run", only="world", console=console) == 0
    finally:
        for process in OTHER_WORK:
            process.wait()
        OTHER_WORK.clear()
        console.file.close()
    # The other process kept about one core busy for the whole step.
    share = json.loads((tmp_path / "run/world/manifest.json").read_text())["other_cpu_share"]
    assert share >= 0.5 / cores
    text = (tmp_path / "out.txt").read_text()
    assert "world: other processes took" in text and "not its cost alone" in text


def _trained(ctx):
    CALLS.append(ctx.out_dir.name.removeprefix(".tmp-"))
    return StepResult(metrics={})


def test_grpo_is_skipped_when_no_eval_arm_decodes_its_model(tmp_path, monkeypatch):
    """`eval { arms sft_only }` reads the SFT model alone: the grpo step trains nothing, says why,
    and is complete (not waiting for a launch) even under `--no-launch`; asking for `craft` trains it."""
    from craftc.ir import EvalSpec

    monkeypatch.setattr(runner, "STEP_FUNCTIONS", {**runner.STEP_FUNCTIONS, "gate": f"{__name__}:_trained",
                                                   "dataset": f"{__name__}:_trained", "sft": f"{__name__}:_trained"})
    plan_dir = write_plan(tmp_path / "plan")
    data = json.loads((plan_dir / "plan.json").read_text())
    data["recipe"]["eval"]["arms"] = ["sft_only"]
    data["content_hash"] = plan_content_hash(data)
    (plan_dir / "plan.json").write_text(json.dumps(data, sort_keys=True, indent=2))
    assert run(plan_dir, tmp_path / "run", until="grpo", launch=False) == 0
    manifest = json.loads((tmp_path / "run/grpo/manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["outputs"] == []
    assert manifest["skipped"] == "no eval arm decodes its model (`eval { arms sft_only }` names no `craft`)"
    assert json.loads((tmp_path / "run/run.json").read_text())["steps"][-1]["status"] == "skipped"
    from runtime.report.training import step_wall_times, wall_time_line      # the report says so too
    assert "grpo skipped" in wall_time_line(step_wall_times(tmp_path / "run"))
    # The arms are an input of the grpo step: a plan that decodes craft does not reuse the skip.
    with_craft = _plan_with({"eval": EvalSpec(arms=("craft", "sft_only"))}, {})
    without = _plan_with({"eval": EvalSpec(arms=("sft_only",))}, {})
    assert runner.step_inputs_hash("grpo", with_craft, tmp_path) != runner.step_inputs_hash("grpo", without, tmp_path)
