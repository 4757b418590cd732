"""A conversation's later turns are played on the policy's own earlier turns, and only
the policy's tokens are trained: tool outputs and later user turns are masked, token by token."""

import math

import pytest

from runtime.agent import AgentTask, HFGenerator
from runtime.train.grpo import GRPOJob, build_rows
from runtime.train.grpo.rollout import completion_tokens, play
from tests.agent.warehouse import task_dict

JOB = dict(model_dir="m", instances="i", warehouse="w", out_dir="o", system_prompt="Answer with THINK, PLAN, CODE.",
           reward={"weights": {"outcome": 1.0}, "aggregate": "sum", "penalties": {}, "step_rewards": True},
           trl={}, wording={"user": "{ask}", "tool": "Output of the CODE block:\n{output}"},
           fmt={"think": "THINK", "plan": "PLAN", "code": "CODE", "answer": "ANSWER"}, workers=2, secret_env=[],
           seed=0)


def job(history: str) -> GRPOJob:
    stage = {"group": 2, "max_turns": 2, "max_new_tokens": 12, "temperature": 1.0, "history": history,
             "per_device_batch": 2}
    return GRPOJob(**JOB, stage=stage)


@pytest.fixture(scope="module")
def conversation(tiny_model, sandbox):
    """One two-turn instance, played by the untrained tiny model with sampling."""
    import torch

    model, tok = tiny_model
    policy = job("policy")
    rows, plays = build_rows(policy, sandbox, [AgentTask.from_dict(task_dict(2, "top_budget-0"))])
    torch.manual_seed(0)
    generate = HFGenerator(model, tok, max_new_tokens=12, do_sample=True, temperature=1.0)
    target = plays[rows[0]["row_key"]]
    episodes, transcripts, generations = play(policy, generate, sandbox, [target], [target.prompt])
    return rows, target, episodes[0], transcripts[0], generations[0]


def test_a_conversation_is_one_row_whose_prompt_is_its_first_turn(conversation):
    rows, target, _, _, _ = conversation
    assert [r["row_key"] for r in rows] == ["top_budget-0"]
    assert [m["role"] for m in target.prompt] == ["system", "user"]
    assert target.prompt[-1]["content"] == "Top 2 campaigns by budget"
    assert len(target.task.turns) == 2 and len(target.references) == 2


def test_turn_two_is_asked_after_the_policys_own_turn_one(conversation):
    _, _, episode, transcript, generations = conversation
    asks = [i for i, m in enumerate(transcript) if m["role"] == "user"]
    assert [transcript[i]["content"] for i in asks] == ["Top 2 campaigns by budget", "Only travel advertisers"]
    before_turn_two = transcript[: asks[1]]
    own = [m["content"] for m in before_turn_two if m["role"] == "assistant"]
    # What came before turn 2 is what the policy wrote, not the reference turn.
    assert own == [g.text for g in generations[: len(own)]] and own
    assert all("Rank campaigns by daily budget" not in text for text in own)
    assert [len(t.calls) for t in episode.turns] == [2, 2]       # a repair call per turn (no CODE in 12 tokens)


def test_only_the_policys_tokens_are_trained_token_by_token(conversation, tiny_model):
    _, target, _, transcript, generations = conversation
    _, tok = tiny_model
    out = completion_tokens(tok, transcript, len(target.prompt), generations)
    ids, mask, logps = out["completion_ids"], out["env_mask"], out["logprobs"]
    assert len(ids) == len(mask) == len(logps)
    prompt_ids = generations[0].prompt_ids
    for gen in generations[1:]:
        # Each generation was conditioned on exactly the tokens trained before it.
        assert gen.prompt_ids == prompt_ids + ids[: len(gen.prompt_ids) - len(prompt_ids)]
    # Token by token: a token is trained iff it is inside one of the policy's assistant turns.
    rendered = tok.apply_chat_template(transcript, return_dict=True, return_assistant_tokens_mask=True)
    marks = rendered["assistant_masks"][len(prompt_ids): len(prompt_ids) + len(ids)]
    for position, (trained, in_turn) in enumerate(zip(mask, marks)):
        assert trained <= in_turn, position                     # never a tool or user token
        if not trained:
            assert math.isnan(logps[position])           # TRL's "unknown", never a made-up 0.0
    masked_text = tok.decode([t for t, m in zip(ids, mask) if m == 0])
    assert "Only travel advertisers" in masked_text                 # the later user turn
    assert "Output of the CODE block" in masked_text                # the tool outputs
    trained_text = tok.decode([t for t, m in zip(ids, mask) if m == 1])
    assert "Only travel advertisers" not in trained_text and "Output of the CODE block" not in trained_text
    # One assistant span per generation; a turn cut off at max_new_tokens trains every token
    # of its span but the end-of-turn token the template closed it with.
    spans, start = [], None
    for position, flag in enumerate(list(marks) + [0]):
        if flag and start is None:
            start = position
        elif not flag and start is not None:
            spans.append((start, position))
            start = None
    assert len(spans) == len(generations) == 4
    for (first, stop), gen in zip(spans, generations):
        cut_off = gen.completion_ids[-1] != tok.eos_token_id
        assert sum(mask[first:stop]) == (stop - first) - (1 if cut_off else 0)


def test_reference_history_plays_one_turn_per_row_on_the_reference_turns(tiny_model, sandbox):
    rows, plays = build_rows(job("reference"), sandbox, [AgentTask.from_dict(task_dict(2, "top_budget-0"))])
    assert [r["row_key"] for r in rows] == ["top_budget-0/0", "top_budget-0/1"]
    second = plays["top_budget-0/1"].prompt
    # The reference turn, its tool output and its answer, as in the training conversations.
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert "Rank campaigns by daily budget and keep 2." in second[2]["content"]
    assert second[4]["content"].startswith("<ANSWER>\nThe result has 2 rows")


def test_reference_rows_under_compacted_earlier_turns_carry_question_code_and_answer(sandbox):
    compact = GRPOJob(**JOB, stage=job("reference").stage, earlier_turns="compact")
    _, plays = build_rows(compact, sandbox, [AgentTask.from_dict(task_dict(2, "top_budget-0"))])
    second = plays["top_budget-0/1"].prompt
    # As the SFT examples and eval show a follow-up: no scratchpad, plan or tool output.
    assert [m["role"] for m in second] == ["system", "user", "assistant", "assistant", "user"]
    assert second[2]["content"].startswith("<CODE>\n") and "Rank campaigns by daily budget" not in second[2]["content"]
    assert second[3]["content"].startswith("<ANSWER>\nThe result has 2 rows")


def test_a_vllm_engine_plays_the_same_rollout_loop(tiny_model, sandbox):
    """`rollout vllm` swaps only the generation call: a stand-in for TRL's vllm_generation
    receives the rendered prompt ids and its completions flow through the same loop."""
    from types import SimpleNamespace

    from runtime.train.grpo import make_rollout_func

    _, tok = tiny_model
    policy = job("policy")
    rows, plays = build_rows(policy, sandbox, [AgentTask.from_dict(task_dict(2, "top_budget-0"))])
    answer = tok("<ANSWER>done</ANSWER>", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    calls = []

    def generate(prompts, images, num_generations):
        calls.append(prompts)
        return prompts, [answer] * len(prompts), [[[-0.5]] * len(answer)] * len(prompts), None

    trainer = SimpleNamespace(use_vllm=True, vllm_generation=SimpleNamespace(generate=generate))
    out = make_rollout_func(policy, tok, sandbox, plays)([rows[0]["prompt"]], trainer)
    assert len(calls) == 2                         # one call per user turn: each answered at once
    assert calls[0][0] == out["prompt_ids"][0]
    assert out["env_mask"][0].count(1) == 2 * len(answer)
    assert out["logprobs"][0][:len(answer)] == [-0.5] * len(answer)
    assert [t.answer for t in out["episode"][0].turns] == ["done", "done"]


def test_verls_rows_compact_earlier_turns_exactly_as_trls_rows_do(sandbox):
    from craftc.ir import BlockFormat
    from runtime.agent import TurnWording
    from runtime.train.verl.data import rl_rows

    task = AgentTask.from_dict(task_dict(2, "top_budget-0"))
    spec = {"data_source": "craft", "agent_name": "craft_tool_agent", "ability": "analytics"}
    verl = rl_rows([task], JOB["system_prompt"], TurnWording(**JOB["wording"]), BlockFormat(**JOB["fmt"]),
                   sandbox, spec, "compact")
    _, plays = build_rows(GRPOJob(**JOB, stage=job("reference").stage, earlier_turns="compact"), sandbox, [task])
    assert [row["prompt"] for row in verl] == [plays["top_budget-0/0"].prompt, plays["top_budget-0/1"].prompt]


def test_measuring_decodes_a_stages_per_device_batch_of_rollouts_per_call(tiny_model, sandbox, monkeypatch):
    """Before and after training, the probe rows are decoded as many at a time as a training step's
    rollouts of one process: the stage's `per_device_batch`, not a constant of the measuring code."""
    from runtime.agent import generate as generate_module
    from runtime.train.grpo.measuring import measure

    model, tok = tiny_model
    stage = {"group": 2, "max_turns": 1, "max_new_tokens": 4, "temperature": 1.0, "history": "policy",
             "per_device_batch": 3}
    measured = GRPOJob(**JOB, stage=stage)
    tasks = [AgentTask.from_dict(task_dict(2, f"top_budget-{i}")) for i in range(2)]
    _, plays = build_rows(measured, sandbox, tasks)
    calls = []
    real = generate_module.HFGenerator._batch
    monkeypatch.setattr(generate_module.HFGenerator, "_batch",
                        lambda self, conversations: calls.append(len(conversations)) or real(self, conversations))
    measure(measured, model, tok, sandbox, list(plays.values()), samples=2)   # 2 rows x 2 samples
    assert calls[0] == 3 and sum(calls[:2]) == 4      # the first model call: 3 of the 4 rollouts, then 1


def test_rollouts_and_the_measurement_decode_with_the_stages_copy_bias(tiny_model, sandbox, monkeypatch):
    """`stage grpo { copy_bias B }`: the rollouts a step trains on and the measured rows are decoded with
    the asked words raised, as eval decodes; a plan without the setting samples plainly."""
    import copy
    from types import SimpleNamespace

    from runtime.agent import generate as generate_module
    from runtime.agent.copy_bias import asked_token_ids
    from runtime.train.grpo.measuring import measure
    from runtime.train.grpo.rollout import make_rollout_func

    model, tok = tiny_model
    tok = copy.deepcopy(tok)
    tok.eos_token = "<|im_start|>"       # the untrained model would end its turn at once
    stage = {"group": 2, "max_turns": 1, "max_new_tokens": 6, "temperature": 1.0, "history": "policy",
             "per_device_batch": 2}
    seen = []
    real = generate_module.HFGenerator._batch
    monkeypatch.setattr(generate_module.HFGenerator, "_batch",
                        lambda self, conversations: seen.append(self.copy_bias) or real(self, conversations))
    trainer = SimpleNamespace(use_vllm=False, model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    tasks = [AgentTask.from_dict(task_dict(2, "top_budget-0"))]

    biased = GRPOJob(**JOB, stage={**stage, "copy_bias": 20.0})
    rows, plays = build_rows(biased, sandbox, tasks)
    out = make_rollout_func(biased, tok, sandbox, plays)([rows[0]["prompt"]] * 2, trainer)
    # At 20 a random tiny model writes nothing but its question's tokens.
    asked = set(asked_token_ids(tok, plays[rows[0]["row_key"]].prompt))
    first_call = [ids[:6] for ids in out["completion_ids"]]
    assert all(len(ids) == 6 and set(ids) <= asked for ids in first_call)
    measure(biased, model, tok, sandbox, list(plays.values()))
    assert seen and set(seen) == {20.0}

    seen.clear()
    plain = GRPOJob(**JOB, stage=stage)          # as plan.json carries it at the default: absent
    make_rollout_func(plain, tok, sandbox, plays)([rows[0]["prompt"]] * 2, trainer)
    measure(plain, model, tok, sandbox, list(plays.values()))
    assert seen and set(seen) == {0.0}
