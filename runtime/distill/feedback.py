"""Teacher feedback: the teacher sees its code's output or error and may repair it.

With ``teacher { feedback N }`` the distill step runs each candidate's CODE in the
sandbox with the execution gate's limits. A candidate the execution gate would
reject (``error``, ``syntax``, ``timeout``) goes back to the teacher as the
conversation so far, its own turn, and a ``tool`` message with the error, written
with the plan's tool template (``prompts/turn.md``); the teacher's next turn
replaces it. Up to N rounds; a candidate still failing after them goes to the gate
as it is, and the gate rejects it.

The repaired candidate carries ``metadata.repairs`` (rounds used) and
``metadata.repaired_from`` (the noise kind of the first attempt, synthetic teacher).
With ``failed_attempts masked`` it also carries ``attempts``: each failed turn and
the tool output it got, which the dataset step keeps as earlier turns masked from
the loss; with ``drop`` they are not kept. A model teacher's candidate's
``metadata.usage`` sums the tokens of its first attempt and of every repair. A repair
request that fails after every retry (``teacher.generate`` gives None for it) leaves
the candidate as it was.

The synthetic teacher's repair is synthetic: asked to repair, it writes the
instance's reference turn (what a teacher that reads the error and fixes the code
would converge to), so the loop is exercised end to end without a model; with
``teacher synthetic { discovery SHARE }`` a repair after an unknown field or entity
error first describes that entity (`runtime.distill.discovery`).
"""

from __future__ import annotations

from typing import Any

from runtime.agent.episode import ExecRecord, tool_output_text
from runtime.distill.blocks import parse_turn
from runtime.distill.gates import execution_rejection
from runtime.distill.teachers.base import TeacherRequest

__all__ = ["repair_candidates", "error_output"]


def _add_usage(total: dict | None, usage: dict | None) -> dict | None:
    if usage is None:
        return total
    if total is None:
        return dict(usage)
    return {k: total.get(k, 0) + usage.get(k, 0) for k in ("prompt_tokens", "completion_tokens")}


def error_output(result) -> str:
    """What the teacher is shown after its code failed: the tool message an agent gets."""
    return tool_output_text(ExecRecord.from_result(result))


def repair_candidates(teacher, requests: list[TeacherRequest], candidates: list[tuple[int, Any]], params: list[dict],
                      pool, recipe, tool_template: str, keep_attempts: bool) -> list[tuple[int, Any, dict]]:
    """Run, show errors, regenerate: ``(request_index, candidate, extra record fields)`` per candidate.

    Args:
        teacher: The teacher backend.
        requests: The distill step's requests (their messages and context).
        candidates: ``(request_index, Candidate)`` pairs as the teacher wrote them.
        params: Each request's instance params (what the code runs with).
        pool: A started `SandboxPool`.
        recipe: The recipe (format, execution gate, teacher feedback rounds).
        tool_template: The ``## tool`` section of ``prompts/turn.md`` (``{output}``).
        keep_attempts: Whether failed attempts are kept (``failed_attempts masked``).
    """
    from dataclasses import replace

    rounds = recipe.teacher.feedback
    reject = recipe.gates.execution.reject
    state = [{"candidate": c, "request": r, "attempts": [], "repairs": 0, "first": dict(c.metadata),
              "usage": c.metadata.get("usage")} for r, c in candidates]
    for round_ in range(rounds):
        parsed = [parse_turn(s["candidate"].text, recipe.format) for s in state]
        runnable = [i for i, p in enumerate(parsed) if p.code and p.code.strip()]
        results = pool.run_many([(parsed[i].code, params[state[i]["request"]]) for i in runnable])
        failing = [(i, result) for i, result in zip(runnable, results) if execution_rejection(result, reject)]
        if not failing:
            break
        repair_requests = []
        for i, result in failing:
            s = state[i]
            base = requests[s["request"]]
            output = tool_template.format(output=error_output(result))
            s["attempts"].append({"text": s["candidate"].text, "output": output})
            conversation = (*base.messages, *(m for a in s["attempts"] for m in (
                {"role": "assistant", "content": a["text"]}, {"role": "tool", "content": a["output"]})))
            repair_requests.append(TeacherRequest(base.system, conversation, 1,
                                                  base.seed * 31 + s["candidate"].candidate_index * 7 + round_ + 1,
                                                  {**base.context, "repair": True}))
        for (i, _), new in zip(failing, teacher.generate(repair_requests)):
            s = state[i]
            if new is None:     # the repair request failed after every retry: the last attempt stands
                s["attempts"].pop()
                continue
            s["repairs"] += 1
            s["usage"] = _add_usage(s["usage"], new.metadata.get("usage"))
            s["candidate"] = replace(new, request_index=s["request"], candidate_index=s["candidate"].candidate_index)
    out = []
    for s in state:
        candidate, extra = s["candidate"], {}
        if s["repairs"]:
            metadata = {**candidate.metadata, "repairs": s["repairs"],
                        "repaired_from": s["first"].get("noise_kind")}
            if s["usage"] is not None:      # a model teacher's tokens: the first attempt's and every repair's
                metadata["usage"] = s["usage"]
            candidate = replace(candidate, metadata=metadata)
            if keep_attempts:
                extra["attempts"] = s["attempts"]
        out.append((s["request"], candidate, extra))
    return out
