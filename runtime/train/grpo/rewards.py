"""The rewards: a rollout scored with the plan's reward spec, as TRL reward functions.

One reward function per component (``__name__`` = the component) receives the
completions, the dataset columns and the rollout's agent turns; ``reward_weights``
come from the plan's reward spec (normalised when the recipe says ``normalized``),
so TRL's logged ``reward`` is ``R_total`` as optimised and ``rewards/<c>/mean`` is
each component. The scoring itself is ``runtime.rewards``'s, turn by turn.
"""

from __future__ import annotations

from runtime.train.grpo.rows import RolloutTask

__all__ = ["OUTCOME", "score_episode", "make_reward_funcs"]

# The verifiable component: a rollout's answer against the reference or the checks. Dynamic
# sampling drops a group whose rollouts all score the same on it (all pass or all fail).
OUTCOME = "outcome"


def score_episode(episode, play_task: RolloutTask, spec, terms=None, llm_judge=None) -> dict[str, float]:
    """Each component (and ``total``) of one rollout: the mean over its played turns.

    TRL's GRPO takes one scalar per completion, so a conversation's per-turn scores are
    averaged (within a turn, ``step_rewards`` still scores each tool call). ``llm_judge``
    (``runtime.rewards.judge.LlmRewardJudge``) joins R_judge when the plan declares one.
    """
    from runtime.rewards import TurnContext, score_turn

    sums: dict[str, float] = {}
    for turn, reference, expectations in zip(episode.turns, play_task.references, play_task.expectations):
        ctx = TurnContext(params=dict(play_task.task.params), reference=reference,
                          expectations=tuple(expectations), terms=terms, llm_judge=llm_judge)
        scores = score_turn(turn, ctx, spec)
        scores["exec_success"] = float(turn.final_ok)
        for name, value in scores.items():
            sums[name] = sums.get(name, 0.0) + value
    return {name: value / max(1, len(episode.turns)) for name, value in sums.items()}


def make_reward_funcs(spec, plays: dict[str, RolloutTask], terms=None, sampled: dict | None = None,
                      llm_judge=None) -> list:
    """One TRL reward function per weighted component, each named after it.

    Each receives the rollout's ``episode`` and ``row_key`` and returns that component's
    score per completion. ``sampled`` (if given) counts the rollouts per workflow;
    ``llm_judge`` is R_judge's llm judge, if the plan declares one.
    """
    cache: dict[int, dict] = {}

    def scores_of(episode, key) -> dict:
        # The four functions score the same rollout: compute it once.
        if id(episode) not in cache:
            cache[id(episode)] = score_episode(episode, plays[key], spec, terms, llm_judge)
        return cache[id(episode)]

    def make(component: str):
        def reward(prompts, completions, episode, row_key, **kwargs):
            values = [scores_of(e, k)[component] for e, k in zip(episode, row_key)]
            if component == spec.components[0]:
                if sampled is not None:
                    for k in row_key:
                        sampled[plays[k].workflow] = sampled.get(plays[k].workflow, 0) + 1
                if "log_metric" in kwargs:
                    ok = [scores_of(e, k)["exec_success"] for e, k in zip(episode, row_key)]
                    calls = [sum(len(t.calls) for t in e.turns) for e in episode]
                    kwargs["log_metric"]("exec_success", sum(ok) / max(1, len(ok)))
                    kwargs["log_metric"]("model_calls", sum(calls) / max(1, len(calls)))
            if component == spec.components[-1]:
                cache.clear()
            return values
        reward.__name__ = component
        return reward

    return [make(c) for c in spec.components]
