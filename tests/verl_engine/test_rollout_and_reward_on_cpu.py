"""craft's tool, agent loop and reward, driven by verl's own AgentLoopWorker and RewardLoopWorker on CPU.

A scripted model client stands in for vLLM: it returns fixed token ids, so what the
loop does with them (tool call, sandbox run, masks, reward) is real verl code with
craft's plug-ins. Runs where verl 0.9.1 is installed (`make test-verl`).
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

pytest.importorskip("verl", reason="verl is not installed here: `make test-verl` runs these tests in .venv-verl")

from test_config_on_cpu import compose, launch_overrides  # noqa: E402

REFERENCE = "result = api.query('SELECT name, daily_budget FROM campaign ORDER BY daily_budget DESC').head(2)"
POLICY_TURN = f"<THINK>rank</THINK><PLAN>the two campaigns with the largest budget</PLAN><CODE>{REFERENCE}</CODE>"
NO_CODE = "<ANSWER>I cannot tell</ANSWER>"


class ScriptedClient:
    """verl's LLM server client, answering each generate call with the next scripted text."""

    def __init__(self, tokenizer, texts):
        self.tokenizer, self.texts, self.returned = tokenizer, list(texts), []

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        text = self.texts.pop(0) if self.texts else NO_CODE
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        self.returned.append(ids)
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids), stop_reason="completed")


@pytest.fixture
def config(verl_plan, tiny_model_dir, warehouse, monkeypatch):
    monkeypatch.setenv("CRAFT_WAREHOUSE", str(warehouse))
    overrides = [o for o in launch_overrides(verl_plan, str(tiny_model_dir)) if "max_prompt_length" not in o
                 and "max_response_length" not in o]
    return compose([*overrides, "data.max_prompt_length=512", "data.max_response_length=384"])


def rollout(config, texts, params=None):
    """One prompt through verl's AgentLoopWorker with craft's agent loop and tool."""
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    worker = AgentLoopWorker(config, llm_client=None)
    client = ScriptedClient(worker.tokenizer, texts)
    worker.llm_client = client
    extra = {"index": 0, "split": "train", "instance": "top/0", "params": json.dumps(params or {}),
             "expectations": json.dumps([{"kind": "same_rows_as_solution", "ordered": True}])}
    tools_kwargs = {"run_code": {"create_kwargs": {"params": json.dumps(params or {})}}}
    batch = DataProto.from_dict(non_tensors={
        "raw_prompt": np.array([[{"role": "system", "content": "You are an analyst."},
                                 {"role": "user", "content": "Top 2 campaigns by budget"}]], dtype=object),
        "agent_name": np.array(["craft_tool_agent"], dtype=object),
        "tools_kwargs": np.array([tools_kwargs], dtype=object), "extra_info": np.array([extra], dtype=object),
        "index": np.array([0]), "data_source": np.array(["craft"], dtype=object),
        "reward_model": np.array([{"style": "rule", "ground_truth": ""}], dtype=object)})
    return asyncio.run(worker.generate_sequences(batch)), client, worker.tokenizer


def test_the_tool_runs_code_in_the_sandbox_and_its_tokens_get_mask_zero(config):
    out, client, tok = rollout(config, [POLICY_TURN, NO_CODE])
    ids = out.batch["responses"][0].tolist()
    mask = out.batch["response_mask"][0].tolist()
    first, second = client.returned
    tool = ids[len(first): len(ids) - ids[::-1].index(second[-1]) - len(second)]
    assert ids[:len(first)] == first and ids[len(first) + len(tool): len(first) + len(tool) + len(second)] == second
    # The sandbox ran the CODE block: the tool turn shows the two largest budgets.
    assert "Winter Fly" in tok.decode(tool) and "Summer Trip" in tok.decode(tool)
    expected = [1] * len(first) + [0] * len(tool) + [1] * len(second)
    assert mask[:len(expected)] == expected                      # token by token
    assert not any(mask[len(expected):])                         # padding
    turns = out.non_tensor_batch["craft_policy_turns"][0]
    assert [t.strip() for t in turns] == [tok.decode(first, skip_special_tokens=True).strip(), NO_CODE]


def reward_of(config, out, ground_truth):
    """craft's reward through verl's RewardLoopWorker, as the agent loop's _compute_score calls it."""
    import torch
    from verl import DataProto
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    item = out[0:1]
    data = DataProto.from_dict(
        tensors={"prompts": item.batch["prompts"], "responses": item.batch["responses"],
                 "attention_mask": item.batch["attention_mask"], "input_ids": item.batch["input_ids"],
                 "position_ids": item.batch["position_ids"]},
        non_tensors={"data_source": np.array(["craft"], dtype=object),
                     "reward_model": np.array([{"style": "rule", "ground_truth": ground_truth}], dtype=object),
                     "extra_info": item.non_tensor_batch["extra_info"],
                     "tool_extra_fields": np.array([{"craft_policy_turns": list(item.non_tensor_batch["craft_policy_turns"][0])}],
                                                   dtype=object)})
    assert isinstance(data.batch["responses"], torch.Tensor)
    worker = RewardLoopWorker(config)
    return worker.loop.run_until_complete(worker.compute_score(data))     # the worker's own event loop


@pytest.fixture
def reference_json(sandbox):
    from runtime.train.verl.scoring import frame_to_json

    return frame_to_json(sandbox.run(REFERENCE, {}).result_frame)


def test_the_reward_logs_all_four_components_and_scores_their_weighted_sum(config, reference_json):
    out, _, _ = rollout(config, [POLICY_TURN, NO_CODE])
    result = reward_of(config, out, reference_json)
    info = result["reward_extra_info"]
    assert set(info) >= {"score", "outcome", "process", "consistency", "judge"}
    weights = dict(config.reward.custom_reward_function.reward_kwargs)
    total = sum(weights[c] * info[c] for c in ("outcome", "process", "consistency", "judge")) / sum(
        weights[c] for c in ("outcome", "process", "consistency", "judge"))     # aggregate normalized
    assert result["reward_score"] == pytest.approx(total)
    assert info["outcome"] == 1.0                                  # the policy's code ran and matched


def test_a_tool_that_prints_the_expected_answer_earns_no_outcome_for_a_model_that_did_not_write_it(
        config, reference_json, monkeypatch):
    from runtime.train.verl import tool as tool_module
    from verl.tools.schemas import ToolResponse

    async def leaky(self, instance_id, parameters, **kwargs):       # a tool that "helpfully" prints the answer
        return ToolResponse(text=f"hint: <CODE>{REFERENCE}</CODE>"), 0.0, {}

    monkeypatch.setattr(tool_module.CraftCodeTool, "execute", leaky)
    out, _, tok = rollout(config, ["<THINK>?</THINK><PLAN>guess</PLAN><CODE>result = 1 / 0</CODE>", NO_CODE])
    decoded = tok.decode(out.batch["responses"][0][out.batch["attention_mask"][0][-out.batch["responses"].shape[1]:].bool()],
                         skip_special_tokens=True)
    assert REFERENCE in decoded            # what verl's naive manager would hand compute_score
    assert reward_of(config, out, reference_json)["reward_extra_info"]["outcome"] == 0.0
    # The test can fail: scored as if the tool's text were the policy's, the same rollout earns the outcome.
    from runtime.train.verl.reward import compute_score

    leaked = compute_score("craft", "", reference_json, {**out.non_tensor_batch["extra_info"][0],
                                                          "craft_policy_turns": [decoded.split("hint: ")[1]]},
                           **dict(config.reward.custom_reward_function.reward_kwargs))
    assert leaked["outcome"] == 1.0
