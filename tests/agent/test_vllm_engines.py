"""vLLM without vLLM: stand-ins for the engine and for TRL's vLLM generation.

- Eval's arms share one process: each arm's ``VLLMGenerator`` must free the previous
  arm's engine before building its own (each asks for most of the GPU's memory).
- TRL's server mode gathers every process's prompts at each generate call: processes
  whose agent loops make different numbers of calls, or calls of different sizes, must
  still make the same calls (``TrainerVLLMGenerator`` keeps them in lockstep).
"""

from __future__ import annotations

import sys
import threading
import types
from types import SimpleNamespace

import pytest

from runtime.agent import generate as gen


class FakeTokenizer:
    eos_token_id = 2

    def apply_chat_template(self, messages, add_generation_prompt=True, tokenize=True, return_dict=False):
        return [10 + len(m["content"]) for m in messages]

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(str(i) for i in ids)


@pytest.fixture
def fake_vllm(monkeypatch):
    """A `vllm` module whose LLM refuses to start while another engine holds the GPU."""
    state = SimpleNamespace(live=0, built=[], cleanups=0)

    class LLM:
        def __init__(self, model):
            if state.live:
                raise RuntimeError("not enough GPU memory: another engine holds 0.92 of it")
            state.live += 1
            state.built.append(model)
            self.llm_engine = SimpleNamespace(engine_core=SimpleNamespace(shutdown=self._shutdown))
            self.alive = True

        def _shutdown(self):
            if self.alive:
                self.alive = False
                state.live -= 1

    def cleanup():
        state.cleanups += 1

    vllm = types.ModuleType("vllm")
    vllm.LLM = LLM
    dist = types.ModuleType("vllm.distributed")
    parallel = types.ModuleType("vllm.distributed.parallel_state")
    parallel.cleanup_dist_env_and_memory = cleanup
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.distributed", dist)
    monkeypatch.setitem(sys.modules, "vllm.distributed.parallel_state", parallel)
    monkeypatch.setattr(gen, "_ENGINE", [])
    yield state
    gen.release_vllm_engine()


def test_each_arm_frees_the_previous_arms_engine_first(fake_vllm):
    tok = FakeTokenizer()
    craft = gen.VLLMGenerator("runs/x/grpo/final", tok)
    stuffed = gen.VLLMGenerator("runs/x/sft/stuffed/final", tok)     # would fail beside the first
    assert fake_vllm.built == ["runs/x/grpo/final", "runs/x/sft/stuffed/final"]
    assert fake_vllm.live == 1 and not craft.llm.alive and stuffed.llm.alive
    assert fake_vllm.cleanups == 1


def test_the_same_model_keeps_its_engine(fake_vllm):
    tok = FakeTokenizer()
    first = gen.VLLMGenerator("m", tok)
    again = gen.VLLMGenerator("m", tok, max_new_tokens=8)
    assert again.llm is first.llm and fake_vllm.built == ["m"]
    gen.release_vllm_engine()
    assert fake_vllm.live == 0 and gen._ENGINE == []


class FakeWorld:
    """Collectives between threads standing in for processes (a barrier per exchange)."""

    def __init__(self, n: int):
        self.n, self.slots = n, [None] * n
        self.barrier = threading.Barrier(n, timeout=10)

    def exchange(self, rank: int, value):
        self.slots[rank] = value
        self.barrier.wait()
        seen = list(self.slots)
        self.barrier.wait()
        return seen


class ServerModeGeneration:
    """TRL's server-mode `generate`: gathers every process's prompts, slices by rank x own count."""

    def __init__(self, world: FakeWorld, rank: int, calls: list):
        self.world, self.rank, self.calls = world, rank, calls

    def generate(self, prompts, images, num_generations):
        everyone = self.world.exchange(self.rank, list(prompts))
        self.calls.append([len(p) for p in everyone])
        flat = [p for ps in everyone for p in ps]
        mine = flat[self.rank * len(prompts):(self.rank + 1) * len(prompts)]
        completions = [[p[-1], 2] for p in mine]          # echoes the prompt's last token: whose it was
        return mine, completions, [[[-0.1], [-0.2]] for _ in mine], None


def test_processes_with_different_turn_counts_stay_in_step(monkeypatch):
    world, calls = FakeWorld(2), {0: [], 1: []}
    # Rank 0's episodes make three calls of two prompts; rank 1's one call of one prompt.
    work = {0: [[{"role": "user", "content": "ab"}], [{"role": "user", "content": "abc"}]] * 1,
            1: [[{"role": "user", "content": "abcdefg"}]]}
    turns = {0: 3, 1: 1}
    results, errors = {}, []

    def process(rank):
        try:
            trainer = SimpleNamespace(vllm_generation=ServerModeGeneration(world, rank, calls[rank]))
            generate = gen.TrainerVLLMGenerator(trainer, FakeTokenizer(),
                                                max_across=lambda n: max(world.exchange(rank, n)))
            results[rank] = [generate(work[rank]) for _ in range(turns[rank])]
            generate.finish()
            results[f"padded{rank}"] = generate.padded_calls
        except Exception as exc:         # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=process, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors and not any(t.is_alive() for t in threads), errors
    # Every call had the same number of prompts from each process, and each got its own completions.
    assert calls[0] == calls[1] == [[2, 2]] * 3
    assert [g.completion_ids[0] for g in results[1][0]] == [17]
    assert [[g.completion_ids[0] for g in call] for call in results[0]] == [[12, 13]] * 3
    assert results["padded1"] == 2 and results["padded0"] == 0


def test_one_process_makes_no_exchange():
    calls = []
    trainer = SimpleNamespace(vllm_generation=SimpleNamespace(
        generate=lambda prompts, images, num_generations: (calls.append(prompts) or
                                                          (prompts, [[5, 2]] * len(prompts),
                                                           [[[-0.5], [-0.1]]] * len(prompts), None))))
    generate = gen.TrainerVLLMGenerator(trainer, FakeTokenizer())
    assert generate.max_across is None
    out = generate([[{"role": "user", "content": "x"}]])
    assert out[0].logprobs == [-0.5, -0.1] and len(calls) == 1
    generate.finish()
    assert len(calls) == 1
