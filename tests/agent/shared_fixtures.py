"""A tiny warehouse, a sandbox pool over it and a tiny real model, shared by the agent,
eval and grpo tests (each of their conftests imports these fixtures)."""

import pytest

from runtime.sandbox import SandboxLimits, SandboxPool
from tests.agent.warehouse import make_warehouse


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    return make_warehouse(tmp_path_factory.mktemp("world") / "warehouse.duckdb")


@pytest.fixture(scope="session")
def sandbox(warehouse):
    with SandboxPool(2, warehouse, SandboxLimits(), "runtime.world.api:WarehouseApi") as pool:
        yield pool


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A real, untrained Qwen3-MoE with a BPE tokenizer trained on agent-like text."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from runtime.train.tiny_moe import build_tiny_moe
    from tests.agent.warehouse import TOP_CODE, TRAVEL_CODE, assistant

    corpus = [assistant("Rank campaigns by budget.", TOP_CODE.format(n=n)) for n in range(2, 6)]
    corpus += [assistant("Keep travel campaigns.", TRAVEL_CODE.format(n=2)), "Top 3 campaigns by budget"]
    path = build_tiny_moe(tmp_path_factory.mktemp("m") / "tiny", corpus,
                          {"hidden": 32, "layers": 1, "heads": 2, "kv_heads": 1, "experts": 2, "top_k": 1,
                           "intermediate": 32, "vocab": 400, "context": 512})
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
