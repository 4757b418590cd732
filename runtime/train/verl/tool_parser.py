"""``tool_format craft``: the recipe's ``<CODE>`` block read as a ``run_code`` tool call.

A model trained on craft's three-block turns (THINK, PLAN, CODE) never writes a hermes
``<tool_call>``; registering this parser under ``craft`` lets verl's tool agent loop
treat the CODE block as the call. Importing this module registers it (craft's agent
loop imports it).
"""

from __future__ import annotations

import json
import re

from verl.experimental.agent_loop.tool_parser import FunctionCall, ToolParser

__all__ = ["CraftCodeParser"]


@ToolParser.register("craft")
class CraftCodeParser(ToolParser):
    """``<CODE>...</CODE>`` -> ``run_code(code=...)``; the tag is the recipe's ``format { code }``."""

    code_tag = "CODE"

    async def extract_tool_calls(self, responses_ids: list[int], tools=None) -> tuple[str, list[FunctionCall]]:
        text = self.tokenizer.decode(responses_ids, skip_special_tokens=True)
        tag = re.escape(self.code_tag)
        match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
        if not match or not match.group(1).strip():
            return text, []
        return text, [FunctionCall(name="run_code", arguments=json.dumps({"code": match.group(1).strip()}))]
