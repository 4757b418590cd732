"""`engine verl` without verl installed: what craftc compiles, diffs and prepares on a CPU machine.

The tests that drive verl itself live in tests/verl_engine (`make test-verl`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from craftc.ir import GRPO_VERL_ONLY, TRL_ONLY, VERL_ONLY, GRPOStage

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes/ads_analytics.craft"
SMOKE_GRPO = "stage grpo { steps 2  group 2  max_new_tokens 48  batch 2  per_device_batch 2  measure 1  history policy  fresh_instances 1  dynamic_sampling 1 }"
# `measure`, `history policy`, dynamic sampling and `measure_every` are TRL's (E516 under verl): the verl stage is
# the smoke stage without them, on SFT's rows (the step tests below stand in a one-workflow gate,
# which fresh rows could not be drawn for).
VERL_GRPO = SMOKE_GRPO.replace("  measure 1  history policy  fresh_instances 1  dynamic_sampling 1 }",
                               "  rows sft  dynamic_sampling 0  measure_every 0  engine verl  rollout vllm  parallel fsdp2  gpus 1 }")
VERL_FILES = {"launch.sh", "verl_overrides.txt", "tool_config.yaml", "agent_loop.yaml", "reward.py", "rl_data.json"}


def craftc(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True)


def test_diff_between_the_trl_and_verl_cluster_profiles_shows_only_the_engine_and_its_settings(tmp_path):
    for profile in ("cluster", "cluster_verl"):
        assert craftc("compile", RECIPE, "-o", tmp_path / profile, "--profile", profile).returncode == 0
    shown = craftc("diff", tmp_path / "cluster", tmp_path / "cluster_verl", "--format", "json")
    assert shown.returncode == 2
    text = craftc("diff", tmp_path / "cluster", tmp_path / "cluster_verl").stdout
    # Only Stage II reruns; SFT, data and eval inputs are the same.
    assert "reused  sft" in text and "rerun   grpo" in text
    changed = {p.relative_to(tmp_path / "cluster_verl").as_posix() for p in (tmp_path / "cluster_verl").rglob("*")
               if p.is_file() and (not (tmp_path / "cluster" / p.relative_to(tmp_path / "cluster_verl")).is_file()
                                   or p.read_bytes() != (tmp_path / "cluster" / p.relative_to(tmp_path / "cluster_verl")).read_bytes())}
    removed = {p.relative_to(tmp_path / "cluster").as_posix() for p in (tmp_path / "cluster").rglob("*")
               if p.is_file() and not (tmp_path / "cluster_verl" / p.relative_to(tmp_path / "cluster")).exists()}
    assert changed == {"plan.json", *(f"stages/grpo/{f}" for f in VERL_FILES)}
    assert removed == {"stages/grpo/trl_config.json", "stages/grpo/accelerate.yaml"}
    old, new = (json.loads((tmp_path / p / "plan.json").read_text())["recipe"] for p in ("cluster", "cluster_verl"))
    grpo = [{k for k in set(a) & set(b) if a[k] != b[k]} for a, b in zip(old["stages"], new["stages"])]
    assert grpo == [set(), {"engine", "parallel"}]
    # The settings only verl reads come with the engine: under trl the plan carries none.
    added = [set(b) - set(a) for a, b in zip(old["stages"], new["stages"])]
    assert added == [set(), {*VERL_ONLY, *GRPO_VERL_ONLY}] and not set(VERL_ONLY) & set(old["stages"][1])
    # And the TRL-only settings go, with TRL's vLLM mode: verl always colocates vLLM. (A setting
    # plan.json omits at its default, such as `shared_prefix off`, is in neither plan.)
    omitted = {name for name, info in GRPOStage.model_fields.items() if info.exclude_if is not None}
    trl_plan = set(old["stages"][1])
    assert set(TRL_ONLY) - trl_plan <= omitted and "measure_every" in trl_plan   # the default measures every 4 steps
    assert [set(a) - set(b) for a, b in zip(old["stages"], new["stages"])] == [
        set(), {"vllm_mode", *TRL_ONLY} & trl_plan]
    assert (new["stages"][1]["tensor_parallel"], new["stages"][1]["expert_parallel"]) != (1, 1)
    assert {k for k in old if old[k] != new[k] and k != "stages"} == {"profile"}


def _with_verl_grpo_setting(tmp_path, setting: str):
    """A copy of the ads recipe (beside links to its specs and solutions) whose `cluster_verl`
    grpo stage also has `setting`; returns the recipe's path."""
    text = RECIPE.read_text()
    grpo = next(x for x in text.splitlines() if "stage grpo { engine verl" in x)
    assert grpo.endswith("lr 1e-6 }"), grpo
    recipe = tmp_path / "recipes/ads.craft"
    recipe.parent.mkdir()
    for part in ("schema_specs", "examples"):
        (tmp_path / part).symlink_to(ROOT / part, target_is_directory=True)
    recipe.write_text(text.replace(grpo, grpo.replace("lr 1e-6 }", f"lr 1e-6  {setting} }}")))
    return recipe


@pytest.mark.parametrize("setting", ["measure 8", "measure_every 4", "copy_bias 2", "history policy", "dynamic_sampling 1", "lora { r 8 }",
                                     "trl { save_total_limit 3 }"])
def test_a_trl_only_setting_on_a_verl_stage_is_e516_at_its_line(tmp_path, setting):
    """What only TRL's GRPO reads would be silently dropped under `engine verl`: refused instead."""
    recipe = _with_verl_grpo_setting(tmp_path, setting)
    done = craftc("compile", recipe, "-o", tmp_path / "plan", "--profile", "cluster_verl")
    # verl's rows are one user turn each on the reference turns: `history reference` is what it does.
    key = setting if setting == "history policy" else setting.split()[0]
    line = next(n for n, x in enumerate(recipe.read_text().splitlines(), 1) if "stage grpo { engine verl" in x)
    assert done.returncode == 1
    assert "E516" in done.stderr and f"`{key}` is read only by `engine trl`" in done.stderr, done.stderr
    assert f"ads.craft:{line}:" in done.stderr


def test_max_length_on_a_trl_grpo_stage_is_e516_and_not_in_the_plan(tmp_path):
    """TRL 1.16's GRPO has no prompt length; only verl reads a grpo stage's `max_length`."""
    text = RECIPE.read_text()
    recipe = tmp_path / "recipes/ads.craft"
    recipe.parent.mkdir()
    for part in ("schema_specs", "examples"):
        (tmp_path / part).symlink_to(ROOT / part, target_is_directory=True)
    recipe.write_text(text.replace(SMOKE_GRPO, SMOKE_GRPO.replace("dynamic_sampling 1 }", "dynamic_sampling 1  max_length 4096 }")))
    done = craftc("compile", recipe, "-o", tmp_path / "plan", "--profile", "smoke")
    assert done.returncode == 1
    assert "E516" in done.stderr and "TRL's GRPO cuts no prompt" in done.stderr, done.stderr
    assert craftc("compile", RECIPE, "-o", tmp_path / "ok", "--profile", "smoke").returncode == 0
    stages = json.loads((tmp_path / "ok/plan.json").read_text())["recipe"]["stages"]
    assert "max_length" in stages[0] and "max_length" not in stages[1]


def test_a_verl_stage_lowers_mixed_precision_to_the_dtype_its_engines_compute_in(tmp_path):
    assert craftc("compile", RECIPE, "-o", tmp_path / "plan", "--profile", "cluster_verl").returncode == 0
    overrides = (tmp_path / "plan/stages/grpo/verl_overrides.txt").read_text().splitlines()
    assert {"actor_rollout_ref.actor.megatron.dtype=bfloat16", "actor_rollout_ref.ref.megatron.dtype=bfloat16"} <= set(overrides)


@pytest.mark.parametrize("setting, line", [
    ("", None),      # verl's own default recomputes activations, as `auto` does on GPUs
    ("checkpointing off", "actor_rollout_ref.model.enable_gradient_checkpointing=false"),
    ("checkpointing on", "actor_rollout_ref.model.enable_gradient_checkpointing=true"),
])
def test_a_verl_stage_passes_an_explicit_checkpointing_on(tmp_path, setting, line):
    recipe = _with_verl_grpo_setting(tmp_path, setting)
    done = craftc("compile", recipe, "-o", tmp_path / "plan", "--profile", "cluster_verl")
    assert done.returncode == 0, done.stderr
    overrides = (tmp_path / "plan/stages/grpo/verl_overrides.txt").read_text().splitlines()
    assert [o for o in overrides if "gradient_checkpointing" in o] == ([line] if line else [])


def test_the_gpu_check_script_parses_and_its_dry_run_prints_the_commands():
    script = ROOT / "benchmarks/gpu_check_verl.sh"
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    done = subprocess.run(["bash", script, "--dry-run", "/tmp/never-made"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    commands = [line for line in done.stdout.splitlines() if line.startswith("+ ")]
    assert any("verl[vllm]==0.9.1" in c for c in commands)
    assert any("craftc.cli run" in c and "--no-launch" in c for c in commands)
    assert any("stages/grpo/launch.sh /tmp/never-made/run/grpo/grpo_config.json" in c for c in commands)
    assert not Path("/tmp/never-made").exists()                   # a dry run runs nothing
    assert SMOKE_GRPO in RECIPE.read_text()                        # the edit the script makes still applies


@pytest.fixture(scope="module")
def verl_smoke_plan(tmp_path_factory):
    """The smoke profile with its grpo stage on verl (one GPU), compiled."""
    tree = tmp_path_factory.mktemp("verl_smoke")
    (tree / "recipes").mkdir()
    for part in ("schema_specs", "examples"):
        (tree / part).symlink_to(ROOT / part, target_is_directory=True)
    (tree / "recipes/ads.craft").write_text(RECIPE.read_text().replace(SMOKE_GRPO, VERL_GRPO, 1))
    done = craftc("compile", tree / "recipes/ads.craft", "-o", tree / "plan", "--profile", "smoke")
    assert done.returncode == 0, done.stderr
    return tree / "plan"


def step_context(plan_dir: Path, run_dir: Path, launch: bool):
    """A grpo step context over a run whose world, gate and sft steps are stand-ins."""
    from rich.console import Console

    from runtime.plan import load_plan
    from runtime.step_context import StepContext
    from tests.agent.warehouse import TOP_CODE, make_warehouse

    for step in ("world", "gate", "sft"):
        (run_dir / step).mkdir(parents=True, exist_ok=True)
        (run_dir / step / "manifest.json").write_text("{}")
    if not (run_dir / "world/warehouse.duckdb").exists():
        make_warehouse(run_dir / "world/warehouse.duckdb")
    (run_dir / "gate/instances.json").write_text(json.dumps([
        {"id": "top/0", "workflow": "top", "split": "train", "params": {"n": 2},
         "turns": [{"ask": "Top 2 campaigns by budget", "code": TOP_CODE.format(n=2), "plan": "rank by budget",
                    "expectations": [{"kind": "same_rows_as_solution", "ordered": True}]}]},
        {"id": "top/1", "workflow": "top", "split": "test", "params": {"n": 3}, "turns": [{"ask": "Top 3"}]}]))
    out = run_dir / ".tmp-grpo"
    out.mkdir(exist_ok=True)
    return StepContext(plan=load_plan(plan_dir), plan_dir=plan_dir, run_dir=run_dir, out_dir=out,
                       console=Console(quiet=True), seed=7, launch=launch)


def test_without_gpus_the_step_stops_before_launching_and_names_the_launch_script(verl_smoke_plan, tmp_path,
                                                                                  monkeypatch):
    from runtime.step_context import StepError
    from runtime.train.grpo import run_grpo
    from runtime.train.verl import step

    monkeypatch.setattr(step, "visible_gpus", lambda: 0)

    with pytest.raises(StepError) as err:
        run_grpo(step_context(verl_smoke_plan, tmp_path / "run", launch=True))
    message = str(err.value)
    assert "engine verl, which needs GPUs and this machine has none: stopping before launching" in message
    assert f"{verl_smoke_plan}/stages/grpo/launch.sh {tmp_path}/run/grpo/grpo_config.json" in message
    assert "--no-launch" in message


def test_no_launch_prepares_the_rl_parquet_and_reads_every_verl_file(verl_smoke_plan, tmp_path):
    import pyarrow.parquet as pq

    from runtime.train.grpo import run_grpo

    ctx = step_context(verl_smoke_plan, tmp_path / "run", launch=False)
    result = run_grpo(ctx)
    assert result.metrics["launch"] == "manual" and result.metrics["rl_rows"] == 1      # train split only
    assert {f"stages/grpo/{f}" for f in VERL_FILES} <= ctx.plan_files_read
    row = pq.read_table(ctx.out_dir / "train.parquet").to_pylist()[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "CREATE TABLE" not in row["prompt"][0]["content"]                             # the stripped prompt
    assert row["agent_name"] == "craft_tool_agent"
    assert json.loads(row["extra_info"]["tools_kwargs"]["run_code"]["create_kwargs"]["params"]) == {"n": 2}
    assert json.loads(row["reward_model"]["ground_truth"])["data"][0][0] == "Winter Fly"   # the reference result
    config = json.loads((ctx.out_dir / "grpo_config.json").read_text())
    assert config == {"model_dir": "../sft/craft/final", "train_files": "train.parquet",
                      "warehouse": "../world/warehouse.duckdb", "out_dir": "."}
