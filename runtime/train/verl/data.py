"""verl's RL parquet from the gate's train instances: one row per instance turn.

Columns (verl 0.9.1's RLHFDataset): ``data_source``, ``prompt`` (the chat so far: the
stage's system prompt, earlier turns answered by the reference, and the user turn),
``ability``, ``reward_model`` (``ground_truth``: the reference result as JSON),
``agent_name`` and ``extra_info`` (the instance, its params and expectations as JSON
text, and the ``run_code`` tool's create kwargs). pyarrow refuses empty structs, so
params travel as JSON text.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime.train.verl.scoring import frame_to_json

__all__ = ["rl_rows", "write_parquet"]


def rl_rows(tasks, system_prompt: str, wording, fmt, sandbox, spec: dict, earlier_turns: str = "full") -> list[dict]:
    """The parquet rows of ``tasks`` (``runtime.agent.AgentTask``), references run in ``sandbox``.

    Under ``earlier_turns compact`` a later row's prompt holds each earlier turn as its
    question, CODE and answer (``runtime.agent.history``), as the SFT data and eval do.
    """
    from runtime.agent import ExecRecord, answer_text, tool_output_text
    from runtime.agent.history import as_earlier_turn
    from runtime.train.reference_turns import reference_turn_texts
    from runtime.distill.blocks import format_answer

    rows = []
    for task in tasks:
        messages = [{"role": "system", "content": system_prompt}]
        params = json.dumps(task.params, sort_keys=True, default=str)
        reference_turns = reference_turn_texts(task, fmt)
        for t, turn in enumerate(task.turns):
            messages.append({"role": "user", "content": wording.render_user(turn.ask)})
            result = sandbox.run(turn.reference_code, task.params)
            rows.append({
                "data_source": spec["data_source"], "agent_name": spec["agent_name"], "ability": spec["ability"],
                "prompt": [dict(m) for m in messages],
                "reward_model": {"style": "rule", "ground_truth": frame_to_json(result.result_frame if result.ok else None)},
                "extra_info": {"index": len(rows), "split": "train", "instance": f"{task.id}/{t}", "params": params,
                               "expectations": json.dumps(list(turn.expectations), sort_keys=True, default=str),
                               "need_tools_kwargs": True,
                               "tools_kwargs": {"run_code": {"create_kwargs": {"params": params}}}},
            })
            record = ExecRecord.from_result(result)
            done = [messages.pop(),
                    {"role": "assistant", "content": reference_turns[t]},
                    {"role": "tool", "content": wording.render_tool(tool_output_text(record))},
                    {"role": "assistant", "content": format_answer(answer_text(record), fmt)}]
            messages += as_earlier_turn(done, earlier_turns, fmt)
    return rows


def write_parquet(rows: list[dict], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path
