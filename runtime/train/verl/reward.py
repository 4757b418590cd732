"""craft's reward on verl: ``compute_score`` and a reward manager that never reads tool output.

``compute_score`` has verl's signature and returns ``{"score": R_total, "outcome",
"process", "consistency", "judge"}``; verl logs every key, and GDPO
(``advantage gdpo``) normalises the components named in ``algorithm.gdpo_reward_keys``.
The weights arrive as reward kwargs (``verl_overrides.txt``), the plan dir and
warehouse from ``launch.sh``.

``CraftRewardManager`` replaces verl's ``naive``/``gdpo`` managers, which hand
``compute_score`` the decoded response with the tool output in it: it passes the
policy's own turns (``extra_fields["craft_policy_turns"]`` from craft's agent loop) as
``solution_str`` and in ``extra_info``. A rollout without them scores 0, never the
decoded response.
"""

from __future__ import annotations

import inspect

from verl import DataProto
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from runtime.train.verl.scoring import POLICY_TURNS, plan_context, score_policy_turns
from runtime.train.verl.tool import _pool

__all__ = ["CraftRewardManager", "compute_score"]



def compute_score(data_source, solution_str, ground_truth, extra_info=None, plan_dir=None, aggregate=None,
                  **weights) -> dict:
    """R_total of one rollout from the policy's own turns, with every component."""
    import dataclasses

    extra_info = dict(extra_info or {})
    spec, terms, fmt = plan_context(str(plan_dir))
    known = {k: float(v) for k, v in weights.items() if k in spec.weights}
    if known:
        spec = dataclasses.replace(spec, weights=known, aggregate=aggregate or spec.aggregate)
    turns = extra_info.get(POLICY_TURNS)
    if turns is None:
        turns = [solution_str] if extra_info.get("craft_solution_is_policy_only") else []
    sandbox = _pool({"workers": 2})
    return score_policy_turns(list(turns), extra_info, ground_truth, sandbox, spec, terms, fmt)


class CraftRewardManager(RewardManagerBase):
    """verl reward manager over the policy's own text (``reward.reward_manager.name``)."""

    def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None, reward_model_tokenizer=None):
        super().__init__(config, tokenizer, compute_score)
        self.compute_score = compute_score or globals()["compute_score"]
        self.is_async = inspect.iscoroutinefunction(self.compute_score)

    async def run_single(self, data: DataProto) -> dict:
        item = data[-1:][0]
        extra_info = dict(item.non_tensor_batch.get("extra_info", {}) or {})
        fields = item.non_tensor_batch.get("tool_extra_fields") or {}
        turns = list(fields.get(POLICY_TURNS) or [])
        extra_info[POLICY_TURNS] = turns
        kwargs = dict(data_source=item.non_tensor_batch["data_source"], solution_str="\n".join(turns),
                      ground_truth=item.non_tensor_batch["reward_model"]["ground_truth"], extra_info=extra_info)
        if self.is_async:
            result = await self.compute_score(**kwargs)
        else:
            result = await self.loop.run_in_executor(None, lambda: self.compute_score(**kwargs))
        return {"reward_score": result["score"], "reward_extra_info": dict(result)}
