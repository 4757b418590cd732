"""R_judge's llm judge in GRPO: the grpo step hands the trainer the gate's verdict cache, the
trainer's reward functions ask the judge (a local fake server) and its verdict moves R_judge;
a warm cache asks nothing."""

from __future__ import annotations

import json

import pytest
from distill_support import compile_variant
from judge_server import JudgeServer

GATE = "gate judge     { judges plan_code, prompt_params, no_ddl_leak  vote unanimous }"
LLM_GATE_AND_REWARD = """judge business {
    kind llm  judgement business
    backend { kind openai  model "judge-model"  base_url env("CRAFT_TEST_JUDGE_URL")  concurrency 2  max_retries 0  timeout 60s }
  }
  gate judge     { judges plan_code, prompt_params, no_ddl_leak, business  vote unanimous }
  reward { outcome 0.5  process 0.2  consistency 0.2  judge 0.1  judge_llm business  judge_every 1 }"""


@pytest.fixture(scope="module")
def judged_reward_plan(tmp_path_factory):
    root = tmp_path_factory.mktemp("reward_judge")
    return compile_variant(root / "recipe", {GATE: LLM_GATE_AND_REWARD})


def _job(plan_dir, cache_dir):
    from runtime.train.grpo.job import GRPOJob

    return GRPOJob(model_dir="", instances="", warehouse="", out_dir="", system_prompt="", reward={}, stage={},
                   trl={}, wording={}, fmt={}, workers=1, secret_env=[], seed=0, plan_dir=str(plan_dir),
                   judge_cache=str(cache_dir))


def _rollout(plan):
    from runtime.agent import AgentTask, Episode, ModelCall, UserTurn
    from runtime.agent.task import TaskTurn
    from runtime.train.grpo.rows import RolloutTask

    ask = "Top 3 campaigns of Acme by clicks in the last 7 days"
    # The plan names a physical table: the deterministic checks (no SQL keyword, every value
    # honoured) pass it, the fake judge fails it.
    calls = [ModelCall(10, "", plan="Rank Acme's campaigns by clicks in clicks_fact over the last 7 days, top 3.",
                       code="result = api.query(\"SELECT 1\")")]
    episode = Episode("i-0", "w", "train", "craft", [UserTurn(0, ask, calls, final_ok=True)])
    task = AgentTask("i-0", "w", {"n": 3, "advertiser": "Acme", "days": 7}, (TaskTurn(ask),))
    play = RolloutTask(key="i-0", workflow="w", prompt=[], task=task, references=[None], expectations=[()])
    return episode, {"i-0": play}


def test_the_grpo_reward_asks_the_llm_judge_and_a_warm_cache_asks_nothing(judged_reward_plan, tmp_path,
                                                                           monkeypatch):
    from runtime.rewards import RewardSpec
    from runtime.train.grpo.job import reward_llm_judge
    from runtime.train.grpo.rewards import make_reward_funcs

    plan, plan_dir = judged_reward_plan
    spec = RewardSpec.from_json(plan_dir / "specs" / "reward.json")
    episode, plays = _rollout(plan)
    with JudgeServer() as server:
        monkeypatch.setenv("CRAFT_TEST_JUDGE_URL", server.url)
        judge = reward_llm_judge(_job(plan_dir, tmp_path / "judge_cache"))
        assert judge is not None and judge.every == 1
        with_judge = {f.__name__: f for f in make_reward_funcs(spec, plays, None, None, judge)}
        score = with_judge["judge"]([[]], [[]], episode=[episode], row_key=["i-0"])[0]
        assert server.requests == 1 and judge.asked == 1
        # without the llm judge R_judge is the deterministic mean alone; the judge's fail moves it
        plain = {f.__name__: f for f in make_reward_funcs(spec, plays, None, None, None)}
        alone = plain["judge"]([[]], [[]], episode=[episode], row_key=["i-0"])[0]
        assert alone == 1.0 and score == pytest.approx(2 / 3)
        # another process (a rerun, a resumed GRPO step) reads the verdict from the cache
        again = reward_llm_judge(_job(plan_dir, tmp_path / "judge_cache"))
        funcs = {f.__name__: f for f in make_reward_funcs(spec, plays, None, None, again)}
        assert funcs["judge"]([[]], [[]], episode=[episode], row_key=["i-0"])[0] == score
        assert server.requests == 1 and again.asked == 0


def test_the_grpo_step_config_carries_the_gates_verdict_cache(judged_reward_plan, tmp_path):
    from rich.console import Console

    from runtime.step_context import StepContext
    from runtime.train.grpo.step import _reward_judge_cache

    plan, plan_dir = judged_reward_plan
    run_dir = tmp_path / "run"
    ctx = StepContext(plan, plan_dir, run_dir, run_dir / ".tmp-grpo", Console(file=open("/dev/null", "w")), 0)
    assert _reward_judge_cache(ctx) == "../judge_cache"
    assert "prompts/judges/business.md" in ctx.plan_files_read
    assert json.loads((plan_dir / "specs" / "reward.json").read_text())["judge_llm"]["name"] == "business"
