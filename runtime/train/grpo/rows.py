"""The training rows: every training instance as what one GRPO row rolls out.

``build_rows`` turns the train split's instances into TRL dataset rows (the prompt and
a key) and a ``RolloutTask`` per key: the turns the rollout plays and the references
and expectations they are scored against. Also what the summary reports about the
rows: how each played turn's outcome is judged and how the reference turns fit in
``max_new_tokens``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from runtime.train.grpo.job import GRPOJob, GRPOSetupError

__all__ = ["load_training_tasks", "load_measure_tasks", "RolloutTask", "prompt_key", "build_rows", "outcome_sources",
           "completion_room"]


def load_training_tasks(job: GRPOJob) -> list:
    """The job's training instances as agent tasks; a missing, malformed or empty file is a setup error."""
    from runtime.agent import TaskFormatError, load_tasks

    try:
        tasks = load_tasks(job.instances)
    except TaskFormatError as exc:
        raise GRPOSetupError(str(exc)) from None
    if not tasks:
        raise GRPOSetupError(f"{job.instances} holds no training instances; check the dataset step's train split")
    return tasks


def load_measure_tasks(job: GRPOJob) -> list:
    """The instances GRPO is measured on before and after (the dev split), or [] without them."""
    from runtime.agent import TaskFormatError, load_tasks

    if not job.measure_instances:
        return []
    try:
        return load_tasks(job.measure_instances)
    except TaskFormatError as exc:
        raise GRPOSetupError(str(exc)) from None


@dataclass
class RolloutTask:
    """What one training row rolls out: the prompt, the turns to play and how each is scored."""

    key: str                        # "<instance id>" (policy history) or "<instance id>/<turn>"
    workflow: str
    prompt: list[dict]              # system prompt (+ reference history) + the first user turn to play
    task: object                    # runtime.agent.AgentTask with the turns to play, in order
    references: list                # per played turn: the reference result (DataFrame) or None
    expectations: list              # per played turn: its expectations


def prompt_key(prompt: list[dict]) -> str:
    """A row's identity as TRL hands it back to the rollout function: its prompt messages."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def build_rows(job: GRPOJob, sandbox, tasks: list) -> tuple[list[dict], dict[str, RolloutTask]]:
    """Every training instance as rollout rows, and what each row plays.

    With ``history policy`` (the default) a row is a whole instance: its first user turn
    is the prompt and the rollout plays every later turn on the policy's own earlier
    turns and their real tool outputs. With ``history reference`` a row is one instance
    turn whose prompt carries the earlier turns as the reference turns and their tool
    outputs (under ``earlier_turns compact`` or ``thinks``, each as its question, CODE or
    THINK, and answer).
    Nothing is capped: GRPO samples rows per step in a seeded order.

    Returns:
        ``(rows, plays)``: dataset rows (``prompt``, ``workflow``, ``row_key``) and the
        ``RolloutTask`` of each row key.
    """
    from runtime.agent import AgentTask, ExecRecord, TurnWording, answer_text, tool_output_text
    from runtime.agent.history import as_earlier_turn
    from runtime.distill.blocks import format_answer
    from runtime.train.reference_turns import reference_turn_texts

    from craftc.ir import BlockFormat

    wording = TurnWording(**job.wording)
    fmt = BlockFormat(**job.fmt)
    jobs = [(turn.reference_code, task.params) for task in tasks for turn in task.turns]
    results = iter(sandbox.run_many(jobs) if hasattr(sandbox, "run_many") else [sandbox.run(*j) for j in jobs])
    rows, plays = [], {}
    for task in tasks:
        refs = [next(results) for _ in task.turns]
        # A hidden reference shapes a prompt's history (history reference), never the reward.
        frames = [r.result_frame if r.ok and turn.reference_visible else None for r, turn in zip(refs, task.turns)]
        expectations = [list(turn.expectations) for turn in task.turns]
        messages = [{"role": "system", "content": job.system_prompt}]
        if job.stage["history"] == "policy":
            prompt = messages + [{"role": "user", "content": wording.render_user(task.turns[0].ask)}]
            plays[task.id] = RolloutTask(task.id, task.workflow, prompt, task, frames, expectations)
            continue
        reference_turns = reference_turn_texts(task, fmt)
        for t, turn in enumerate(task.turns):
            prompt = messages + [{"role": "user", "content": wording.render_user(turn.ask)}]
            one = AgentTask(id=f"{task.id}/{t}", workflow=task.workflow, params=task.params, turns=(turn,))
            plays[one.id] = RolloutTask(one.id, task.workflow, prompt, one, [frames[t]], [expectations[t]])
            record = ExecRecord.from_result(refs[t])
            done = [prompt[-1], {"role": "assistant", "content": reference_turns[t]},
                    {"role": "tool", "content": wording.render_tool(tool_output_text(record))},
                    {"role": "assistant", "content": format_answer(answer_text(record), fmt)}]
            messages = prompt[:-1] + as_earlier_turn(done, job.earlier_turns, fmt)
    for key, play in plays.items():
        rows.append({"prompt": play.prompt, "workflow": play.workflow, "row_key": key})
    return rows, plays


def outcome_sources(plays: dict[str, RolloutTask]) -> dict[str, int]:
    """How many played turns' R_outcome compares with a reference result, and how many is
    the share of checks passed (references hidden, or turns with checks only)."""
    from craftc.ir import REFERENCE_KINDS

    turns = [(expectations, frame) for p in plays.values() for expectations, frame in zip(p.expectations, p.references)]
    by_reference = sum(frame is not None and any(e["kind"] in REFERENCE_KINDS for e in expectations)
                       for expectations, frame in turns)
    return {"reference": by_reference, "checks": len(turns) - by_reference}


def completion_room(job: GRPOJob, tokenizer, tasks) -> dict:
    """How the reference turns fit in ``max_new_tokens``, with a warning when some do not.

    A completion cut off mid-``<CODE>`` never runs, so its outcome reward is 0: a turn
    whose reference does not fit teaches GRPO nothing (runtime.agent.answer_room). (The
    smoke profile cuts most of them on purpose, to stay fast; a real profile should not.)
    """
    from craftc.ir import BlockFormat
    from runtime.agent.answer_room import answer_room, room_warning
    from runtime.train.reference_turns import reference_turn_texts

    fmt = BlockFormat(**job.fmt)
    limit = job.stage["max_new_tokens"]
    # Each with the end-of-turn token a completion writes after it.
    counted = answer_room([len(tokenizer(text, add_special_tokens=False)["input_ids"]) + 1
                           for task in tasks for text in reference_turn_texts(task, fmt)], limit)
    room = {"max_new_tokens": limit, "median_reference_tokens": counted["median"],
            "longest_reference_tokens": counted["longest"],
            "share_cut_off": round(counted["longer"] / counted["answers"], 4) if counted["answers"] else 0.0}
    warning = room_warning(counted, "reference turns of the rows")
    if warning:
        room["warning"] = warning
    return room
