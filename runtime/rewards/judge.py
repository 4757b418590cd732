"""R_judge: business alignment of the final turn with the analyst's request.

Two deterministic checks, averaged: every prompt parameter is honoured (its value
appears in the code as a literal, or in the plan as text) and the plan leaks no
DDL (no SQL keywords, no physical or logical table or column names: the plan is
for the business reader). An optional LLM judge (any callable ``(turn, params)``
returning a score in [0, 1], or None to stay out) joins the average.

`make_llm_judge` builds that callable from the plan: ``reward { judge_llm NAME
judge_every N }`` names a declared llm judge, whose prompt the plan holds
(``prompts/judges/NAME.md``) and whose verdicts share the gate's on-disk cache. It
asks about one question in N, chosen by a hash of the question, so every rollout of
a GRPO group is scored alike; a pass scores 1, a fail 0, and an abstention or an
unsampled question leaves the deterministic mean as it is.
"""

from __future__ import annotations

import re

from runtime.rewards.schema_terms import SchemaTerms

__all__ = ["params_honoured", "ddl_leaks", "judge_reward", "make_llm_judge", "llm_judge_from_plan", "reward_judge_entry",
           "LlmRewardJudge"]

_SQL_WORDS = re.compile(r"\b(SELECT|FROM|JOIN|WHERE|GROUP BY|ORDER BY|CREATE|TABLE|VIEW)\b")


def params_honoured(params: dict, plan: str | None, code: str | None) -> float:
    """Share of parameter values that appear in the code (as ``repr`` or text) or the plan.

    Example:
        >>> params_honoured({"n": 5, "advertiser": "Acme"}, "Top 5 for Acme", "x = 5")
        1.0
        >>> params_honoured({"n": 5, "days": 30}, "", "x = 5")
        0.5
    """
    if not params:
        return 1.0
    plan, code = plan or "", code or ""
    hits = 0
    for value in params.values():
        text = str(value)
        if repr(value) in code or text in code or (text and text in plan):
            hits += 1
    return hits / len(params)


def ddl_leaks(plan: str | None, terms: SchemaTerms | None = None) -> list[str]:
    """DDL words in a plan: SQL keywords in capitals and schema identifiers."""
    if not plan:
        return []
    leaks = _SQL_WORDS.findall(plan)
    if terms is not None:
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", plan.lower()))
        leaks += sorted(words & terms.identifiers)
    return leaks


def judge_reward(turn, params: dict, terms: SchemaTerms | None = None, llm_judge=None) -> float:
    """Judge score of a user turn's final call, in [0, 1]; 0 when the turn produced nothing."""
    call = next((c for c in reversed(turn.calls) if c.code or c.answer), None)
    if call is None:
        return 0.0
    scores = [params_honoured(params, call.plan, call.code), 0.0 if ddl_leaks(call.plan, terms) else 1.0]
    if llm_judge is not None:
        score = llm_judge(turn, params)
        if score is not None:
            scores.append(float(score))
    return sum(scores) / len(scores)


class LlmRewardJudge:
    """R_judge's llm judge: one in ``every`` questions asked, verdicts cached on disk."""

    def __init__(self, judge, every: int = 1):
        self.judge, self.every = judge, max(1, every)
        self.asked = 0

    def sampled(self, ask: str) -> bool:
        """Whether this question is judged (deterministic: the same for a whole group)."""
        import hashlib

        return int(hashlib.sha256(ask.encode()).hexdigest()[:8], 16) % self.every == 0

    def __call__(self, turn, params: dict) -> float | None:
        from runtime.distill.llm_judge import parse_verdict

        call = next((c for c in reversed(turn.calls) if c.code or c.answer), None)
        if call is None or not self.sampled(turn.ask):
            return None
        user = self.judge.prompt.render(turn.ask, params, call.plan or "", call.code or "")
        text, _, cached = self.judge.replies([user])[0]
        self.asked += not cached
        passed, _ = parse_verdict(text)
        return None if passed is None else float(passed)


def make_llm_judge(ctx) -> LlmRewardJudge | None:
    """The llm judge R_judge asks in GRPO (``reward { judge_llm NAME }``), or None when unset.

    ``ctx`` is the step's `StepContext`: the prompt is read through ``ctx.artifact`` (so
    the manifest names it) and the cache is the gate's (``gate judge { cache DIR }``).
    The grpo step calls it to check the judge before launching; the trainer builds the
    same judge with :func:`llm_judge_from_plan`.

    Example (not run here: needs a step context and a judge endpoint)::

        llm_judge = make_llm_judge(ctx)
        TurnContext(params, reference, expectations, terms, llm_judge=llm_judge)
    """
    from runtime.distill.step import judge_cache_dir

    spec = reward_judge_entry(ctx.plan_dir)
    if not spec:
        return None
    ctx.artifact(spec["entry"]["prompt"])
    return llm_judge_from_plan(ctx.plan, ctx.plan_dir, judge_cache_dir(ctx, ctx.plan.recipe.gates.judge.cache))


def reward_judge_entry(plan_dir) -> dict | None:
    """``specs/reward.json``'s llm judge and how often it is asked, or None without one."""
    import json
    from pathlib import Path

    spec = json.loads((Path(plan_dir) / "specs" / "reward.json").read_text(encoding="utf-8"))
    entry = spec.get("judge_llm")
    return {"entry": entry, "every": spec.get("judge_every", 1)} if entry else None


def llm_judge_from_plan(plan, plan_dir, cache_dir) -> LlmRewardJudge | None:
    """R_judge's llm judge from a plan dir, its verdicts in ``cache_dir`` (the gate's cache).

    What the GRPO trainer calls in its own process: the judge, its prompt and backend as
    the plan declares them, so the gate and the reward share one cache of verdicts.
    """
    from pathlib import Path

    from craftc.ir import Judge
    from runtime.distill.judges import _llm_judge

    found = reward_judge_entry(plan_dir)
    if found is None:
        return None
    entry = found["entry"]
    judge = Judge.model_validate({k: v for k, v in entry.items() if k != "prompt"})
    prompt = (Path(plan_dir) / entry["prompt"]).read_text(encoding="utf-8")
    llm = _llm_judge(judge, plan.recipe, None, {judge.name: prompt}, Path(cache_dir))
    return LlmRewardJudge(llm, found["every"])
