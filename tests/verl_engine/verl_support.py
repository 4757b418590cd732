"""Fixtures of the verl tests: they run where verl 0.9.1 is installed (`make test-verl`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes/ads_analytics.craft"


def compile_plan(out: Path, profile: str = "cluster_verl", recipe: Path = RECIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "craftc.cli", "compile", str(recipe), "-o", str(out),
                           "--profile", profile], capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="session")
def verl_plan(tmp_path_factory) -> Path:
    """The ads recipe's cluster_verl profile, compiled."""
    out = tmp_path_factory.mktemp("verl") / "plan"
    done = compile_plan(out)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A real tiny Qwen3-MoE directory (verl reads its config and tokenizer)."""
    from runtime.train.tiny_moe import build_tiny_moe

    corpus = ["<THINK>rank</THINK><PLAN>campaigns by budget</PLAN><CODE>result = 1</CODE>", "Top 3 campaigns",
              "<ANSWER>done</ANSWER>", "error FormatError"]
    return build_tiny_moe(tmp_path_factory.mktemp("m") / "tiny", corpus,
                          {"hidden": 32, "layers": 1, "heads": 2, "kv_heads": 1, "experts": 2, "top_k": 1,
                           "intermediate": 32, "vocab": 400, "context": 1024})


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory) -> Path:
    import importlib.util

    # Loaded by path: a package installed with verl claims the top-level name `tests`.
    spec = importlib.util.spec_from_file_location("agent_warehouse", ROOT / "tests/agent/warehouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_warehouse(tmp_path_factory.mktemp("world") / "warehouse.duckdb")


@pytest.fixture(scope="session")
def sandbox(warehouse):
    from runtime.sandbox import SandboxLimits, SandboxPool

    with SandboxPool(1, warehouse, SandboxLimits()) as pool:
        yield pool
