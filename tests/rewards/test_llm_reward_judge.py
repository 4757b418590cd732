"""R_judge's llm judge: sampled by question, cached, and absent when the recipe sets none."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "distill"))

from judge_server import JudgeServer  # noqa: E402

from craftc.ir import Teacher  # noqa: E402
from runtime.distill.llm_judge import JudgePrompt, LlmJudge, VerdictCache  # noqa: E402
from runtime.distill.teachers.openai import OpenAITeacher  # noqa: E402
from runtime.rewards.judge import LlmRewardJudge, judge_reward  # noqa: E402

PROMPT = JudgePrompt.parse("## system\nJudge.\n\n## user\nQUESTION:\n$ask\n\nPLAN:\n$plan\n\nCODE:\n$code\n")


def _turn(ask: str, plan: str):
    call = SimpleNamespace(plan=plan, code="result = api.query('select 1')", answer=None)
    return SimpleNamespace(ask=ask, calls=[call])


def test_the_llm_verdict_joins_r_judge_and_a_rerun_is_served_from_the_cache(tmp_path):
    with JudgeServer() as server:
        backend = OpenAITeacher(Teacher(kind="openai", model="judge-model", base_url=server.url))
        judge = LlmRewardJudge(LlmJudge("business", 1.0, PROMPT, backend, VerdictCache(tmp_path)), every=1)
        turns = [_turn(f"Top {n} campaigns by spend?", "Rank campaigns by spend.") for n in range(3, 9)]
        leak = _turn("Top 3 campaigns by spend?", "SELECT * FROM adw.campaign_dim")
        scores = [judge(t, {}) for t in [*turns, leak]]
        sent = server.requests
        again = [judge(t, {}) for t in [*turns, leak]]
    assert scores == again and server.requests == sent
    assert scores[-1] == 0.0 and 1.0 in scores
    assert judge_reward(leak, {}, None, judge) < judge_reward(leak, {}, None, None)


def test_judge_every_samples_whole_questions(tmp_path):
    judge = LlmRewardJudge(SimpleNamespace(), every=4)
    asks = [f"Spend of advertiser {i}?" for i in range(200)]
    chosen = [a for a in asks if judge.sampled(a)]
    assert 25 < len(chosen) < 75
    assert all(judge.sampled(a) for a in chosen), "the same question is always sampled alike"
    unsampled = _turn(next(a for a in asks if not judge.sampled(a)), "plan")
    assert judge(unsampled, {}) is None
