"""What one agent episode leaves behind: plain records, JSON-serialisable.

Rewards and evaluation metrics are pure functions over these records, so a
trajectory can be scored again (or by hand, in a test) without a model or a
warehouse. Result frames travel in memory only; the JSON twin keeps their shape
and a preview.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["DISCOVERY_CALLS", "ExecRecord", "ModelCall", "UserTurn", "Episode", "answer_text", "count_discovery",
           "tool_output_text"]

# How much of an error message a tool message shows: its first line, this long at most.
ERROR_CHARS = 300

# Warehouse API methods that explore the schema instead of answering the question.
DISCOVERY_CALLS = ("list_entities", "describe", "describe_entity")


def count_discovery(api_calls) -> int:
    """How many of ``api_calls`` are schema-discovery calls.

    Example:
        >>> count_discovery(["list_entities", "query", "describe:Campaign"])
        2
    """
    return sum(1 for call in api_calls if str(call).split(":")[0].split("(")[0] in DISCOVERY_CALLS)


@dataclass
class ExecRecord:
    """The part of a sandbox ``ExecResult`` worth keeping."""

    ok: bool
    error_class: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    rows: int = 0
    columns: tuple[str, ...] = ()
    preview: str = ""
    api_calls: tuple[str, ...] = ()
    wall_s: float = 0.0

    @classmethod
    def from_result(cls, result) -> "ExecRecord":
        return cls(
            ok=bool(result.ok), error_class=result.error_class, error_type=result.error_type,
            error_message=result.error_message, rows=int(result.result_rows),
            columns=tuple(result.result_columns), preview=result.result_preview,
            api_calls=tuple(result.api_calls), wall_s=float(result.wall_s),
        )

    @classmethod
    def from_summary(cls, execution: dict[str, Any]) -> "ExecRecord":
        """From the gate's JSON summary of a candidate's execution (``gate/accepted.jsonl``)."""
        return cls(
            ok=bool(execution.get("ok")), error_class=execution.get("error_class"),
            error_type=execution.get("error_type"), error_message=execution.get("error_message"),
            rows=int(execution.get("rows") or 0), columns=tuple(execution.get("columns") or ()),
            preview=execution.get("preview") or "",
        )


# The sandbox's two time limits (runtime/sandbox/result.py) and the one text they show.
TIME_LIMITS = ("Timeout", "CpuLimit")
TIME_LIMIT_TEXT = "Timeout: the code ran past its time limit and was stopped"


def tool_output_text(record: ExecRecord) -> str:
    """What the agent is shown after its CODE ran: the result preview, or the error on one line.

    The one home of a tool message's body. The training conversations (dataset step),
    the teacher's repair requests (distill feedback), GRPO rollouts and eval all show
    this text, so a trained agent reads at eval exactly what it learned to read.

    Example:
        >>> tool_output_text(ExecRecord(ok=False, error_type="BinderError", error_message="no column x\\nLINE 1"))
        'BinderError: no column x'
        >>> tool_output_text(ExecRecord(ok=False, error_class="CpuLimit", error_message="killed after 1.3 s of CPU"))
        'Timeout: the code ran past its time limit and was stopped'
    """
    if record.ok:
        return record.preview.rstrip() or f"[{record.rows} rows]"
    # The sandbox names a limit it enforced in `error_class` (a job it stopped reports no
    # exception type); `error_type` is the exception a job raised itself, never a limit.
    if record.error_class in TIME_LIMITS:
        # Which limit stops an endless loop first, and after how many CPU seconds, depends
        # on the host's load: the record keeps that, the conversation must not, or the same
        # seed would give other training data on a busier machine.
        return TIME_LIMIT_TEXT
    kind = record.error_type or record.error_class or "Error"
    lines = (record.error_message or "").strip().splitlines()
    message = lines[0][:ERROR_CHARS] if lines else ""
    return message if message.startswith(f"{kind}:") else f"{kind}: {message}".rstrip(": ")


def answer_text(record: ExecRecord) -> str:
    """The short final answer a turn closes with, summarising its result.

    The training conversations close every turn with it (synthetic: written from the
    result, not by a teacher), and the agent loop asks the agent for its own after a
    successful run, so later turns see the history they were trained on.

    Example:
        >>> answer_text(ExecRecord(ok=True, rows=2, columns=("day", "clicks"), preview="day clicks\\n  1     40"))
        'The result has 2 rows with day, clicks. First row: 1 40.'
    """
    preview = [line for line in record.preview.splitlines() if line.strip()]
    first = f" First row: {' '.join(preview[1].split())}." if len(preview) > 1 else ""
    rows = record.rows
    return f"The result has {rows} row{'s' if rows != 1 else ''} with {', '.join(record.columns)}.{first}"


@dataclass
class ModelCall:
    """One model generation inside a user turn, and what came of it."""

    input_tokens: int                   # true tokenizer count of the rendered model input
    text: str                           # the assistant message as generated
    think: str | None = None
    plan: str | None = None
    code: str | None = None
    answer: str | None = None
    well_formed: bool = False
    exec: ExecRecord | None = None      # None when the turn had no code
    tool_message: str | None = None     # what the model was shown next
    discovery_calls: int = 0
    resampled: bool = False             # greedy decoding repeated failed code, so this call was
                                        # decoded again, sampled (`eval { repeat_temperature }`)
    cut_off: bool = False               # generation stopped at max_new_tokens before the call's end


@dataclass
class UserTurn:
    """One analyst question of a conversation and the agent's attempts at it."""

    index: int
    ask: str
    calls: list[ModelCall] = field(default_factory=list)
    final_ok: bool = False              # the turn ended on a successful execution
    final_code: str | None = None       # the code of that execution
    final_plan: str | None = None
    answer: str | None = None
    answer_call: ModelCall | None = None  # the call that wrote the answer after a successful run
    # Filled by scoring (evaluation, rewards), not by the loop:
    passed: bool | None = None          # final result passes the expectations vs the reference
    kept_constraints: bool | None = None  # follow-ups: earlier turns' constraints still in the code
    consistency: float | None = None    # plan/code agreement of the final call, in [0, 1]; None: unscored,
                                        # or plan and code name no entity (eval)
    failure: str | None = None          # evaluation: why the turn failed (runtime/eval/failures.py)
    answered_workflow: str | None = None  # evaluation, with `answered_another_workflow`: the workflow
                                          # whose reference the code resembles; old records read None
    constraints_required: int | None = None  # follow-ups: how many earlier constraints the reference keeps
    excluded: str = ""                  # evaluation: why the turn is not scored ("" = scored), e.g.
                                        # "the reference returns no rows"; old records read as ""
    final_frame: Any = field(default=None, repr=False)  # pandas DataFrame, in memory only


@dataclass
class Episode:
    """A whole conversation (one or more user turns) run by one arm on one instance."""

    instance_id: str
    workflow: str = ""
    split: str = ""
    arm: str = ""
    turns: list[UserTurn] = field(default_factory=list)

    @property
    def calls(self) -> list[ModelCall]:
        return [call for turn in self.turns for call in turn.calls]

    def to_dict(self) -> dict:
        """The JSON twin (frames dropped; ``ExecRecord`` keeps their shape and preview)."""
        data = asdict(self)
        for turn in data["turns"]:
            turn.pop("final_frame", None)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Episode":
        turns = []
        for t in data.get("turns", ()):
            calls = [_call_from_dict(c) for c in t.get("calls", ())]
            answer_call = _call_from_dict(t["answer_call"]) if t.get("answer_call") else None
            rest = {k: v for k, v in t.items() if k not in ("calls", "answer_call")}
            turns.append(UserTurn(**rest, calls=calls, answer_call=answer_call))
        return cls(**{**{k: v for k, v in data.items() if k != "turns"}, "turns": turns})


def _call_from_dict(data: dict) -> ModelCall:
    c = dict(data)
    if c.get("exec") is not None:
        e = dict(c["exec"])
        e["columns"] = tuple(e.get("columns", ()))
        e["api_calls"] = tuple(e.get("api_calls", ()))
        c["exec"] = ExecRecord(**e)
    return ModelCall(**c)
