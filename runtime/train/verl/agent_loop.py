"""``craft_tool_agent``: verl's tool agent loop, also recording the policy's own turns.

verl's reward managers decode the whole response, tool output included (upstream PR
#6392 closed unmerged), so a tool that prints the answer would earn the reward for a
model that never wrote it. This loop runs verl's ``ToolAgentLoop`` unchanged and then
cuts the response into its runs of response-mask-1 tokens (what the policy generated)
and stores their text as ``extra_fields["craft_policy_turns"]``; craft's reward
manager scores only those (``runtime.train.verl.reward``).
"""

from __future__ import annotations

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

import runtime.train.verl.tool_parser  # noqa: F401 - registers tool_format `craft`
from runtime.train.verl.scoring import POLICY_TURNS

__all__ = ["CraftToolAgentLoop", "policy_segments"]


def policy_segments(response_ids: list[int], response_mask: list[int]) -> list[list[int]]:
    """The runs of tokens with mask 1, in order: one per policy turn."""
    runs, current = [], []
    for token, keep in zip(response_ids, response_mask):
        if keep:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


class CraftToolAgentLoop(ToolAgentLoop):
    """``ToolAgentLoop`` + the policy's own turn texts in ``extra_fields``."""

    async def run(self, sampling_params, **kwargs) -> AgentLoopOutput:
        output = await super().run(sampling_params, **kwargs)
        segments = policy_segments(output.response_ids, output.response_mask)
        output.extra_fields[POLICY_TURNS] = [self.tokenizer.decode(s, skip_special_tokens=True) for s in segments]
        return output
