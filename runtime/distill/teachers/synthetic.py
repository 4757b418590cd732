"""The synthetic teacher: reference solutions plus a seeded, labelled noise model.

It needs no model and no network, so a recipe runs end to end on a laptop, and
because every corrupted candidate carries its ``noise_kind`` the funnel can show
which gate caught which failure. A clean candidate is the instance's reference PLAN
and CODE with a short scratchpad written from the question and its params
(with ``scratchpad task``, a conversation's first turn names its workflow's ``doc``
instead of restating the question; with ``both``, before it).

With ``discovery`` above 0 it also writes schema discovery where a real teacher would
look the schema up (``runtime.distill.discovery``): a seeded share of first-turn
candidates, and every repair after an unknown field or entity error, begin their CODE
with ``api.describe(...)``. At 0, the default, it writes exactly what it wrote before
the setting existed.

Example:
    >>> from craftc.ir import BlockFormat, Schema
    >>> teacher = SyntheticTeacher(Schema(name="s", version=1, source="s.craft"), BlockFormat(), noise=0.0)
    >>> request = TeacherRequest("sys", ({"role": "user", "content": "How many?"},), 1, 7,
    ...     {"ask": "How many?", "params": {}, "plan": "Count rows.", "code": "result = 1"})
    >>> [c.metadata["clean"] for c in teacher.generate([request])]
    [True]
"""

from __future__ import annotations

import random
from typing import Any, get_args

from craftc.ir import BlockFormat, Schema, Scratchpad, Teacher as TeacherSpec
from runtime.distill.blocks import format_turn, parse_turn
from runtime.distill.discovery import Discovery, describe_call, entity_fields, first_view, repair_call, with_discovery
from runtime.distill.noise import DEFAULT_NOISE_KINDS, NOISE_KINDS, NoiseContext, Turn3, corrupt
from runtime.distill.teachers.base import Candidate, TeacherError, TeacherRequest
from runtime.distill.vocabulary import SchemaVocabulary, split_camel

__all__ = ["SyntheticTeacher"]

_OPENINGS = (
    "The analyst asks: {ask}",
    "Question: {ask}",
    "I need to answer: {ask}",
)
_CLOSINGS = (
    "I will query the logical views through `api` and assign the answer to `result`.",
    "Plan first in business terms, then one query through `api`; the answer goes to `result`.",
    "Keep it to the entities the question needs, compute in SQL, assign `result`.",
)


class SyntheticTeacher:
    """Builds candidates from reference solutions; ``noise`` is the corrupted share,
    ``discovery`` the share of first-turn candidates that look the schema up first."""

    name = "synthetic teacher"

    def __init__(self, schema: Schema, fmt: BlockFormat, noise: float = 0.5,
                 kinds: tuple[str, ...] = DEFAULT_NOISE_KINDS, discovery: float = 0.0,
                 scratchpad: Scratchpad = TeacherSpec.model_fields["scratchpad"].default):
        for setting, value, example in (("noise", noise, "noise 0.5"), ("discovery", discovery, "discovery 20%")):
            if not 0.0 <= value <= 1.0:
                raise TeacherError(f"synthetic teacher: `{setting}` must be between 0 and 1, got {value}; "
                                   f"set `{example}` in the teacher block")
        unknown = [k for k in kinds if k not in NOISE_KINDS]
        if unknown:
            raise TeacherError(f"synthetic teacher: unknown noise kind `{unknown[0]}`; "
                               f"known: {', '.join(NOISE_KINDS)}")
        if scratchpad not in get_args(Scratchpad):
            raise TeacherError(f"synthetic teacher: unknown scratchpad `{scratchpad}`; "
                               f"known: {', '.join(get_args(Scratchpad))}")
        self.fmt, self.noise, self.kinds, self.discovery = fmt, noise, tuple(kinds), discovery
        self.scratchpad = scratchpad
        self.vocab = SchemaVocabulary.from_schema(schema)
        self.fields = entity_fields(schema)

    def _think(self, context: dict[str, Any], rng: random.Random, note: str | None = None) -> str:
        ask = context.get("ask", "")
        params = context.get("params", {})
        opening = rng.choice(_OPENINGS).format(ask=ask)   # drawn either way: the rest of the text keeps its draws
        task = context.get("task", "")
        # `scratchpad task` / `both`: a first turn names its workflow's task (instead of, or
        # before, the question), so a phrasing never trained on still leads to known words.
        lines = [opening]
        if task and self.scratchpad != "question":
            lines = [f"Task: {task.rstrip('.')}.", *(lines if self.scratchpad == "both" else [])]
        if params:
            lines.append("Parameters: " + ", ".join(f"{k} = {v}" for k, v in params.items()) + ".")
        entities = [split_camel(name) for name in self.vocab.entities_named(context.get("plan", ""))]
        if entities:
            lines.append("This touches " + ", ".join(dict.fromkeys(entities)) + ".")
        if note:
            lines.append(note)
        lines.append(rng.choice(_CLOSINGS))
        return "\n".join(lines)

    def _format(self, turn: Turn3) -> str:
        return turn.raw if turn.raw is not None else format_turn(turn.think, turn.plan, turn.code, self.fmt)

    def _discovery(self, request: TeacherRequest, index: int) -> Discovery | None:
        """The discovery call this candidate begins with, by the rule in `runtime.distill.discovery`."""
        if not self.discovery:
            return None
        if request.context.get("repair"):
            tool = next((m["content"] for m in reversed(request.messages) if m["role"] == "tool"), "")
            failed = next((m["content"] for m in reversed(request.messages) if m["role"] == "assistant"), "")
            call = repair_call(tool, parse_turn(failed, self.fmt).code, self.fields)
            if call is None:
                return None
            return Discovery(call, "repair", "The error names something the warehouse does not have; "
                                             f"I look it up with `{call}` before fixing the query.")
        first_question = [m["role"] for m in request.messages] == ["user"]
        # Its own stream, so the candidates' text and noise are the same with or without it.
        if not first_question or random.Random(f"{request.seed}:{index}:discovery").random() >= self.discovery:
            return None
        view = first_view(request.context["code"], self.fields)
        if view is None:
            return None
        return Discovery(describe_call(view), "first_turn",
                         f"I check the fields of {view} with `{describe_call(view)}` before the query.")

    def _candidate(self, request: TeacherRequest, request_index: int, index: int) -> Candidate:
        context = request.context
        if "plan" not in context or "code" not in context:
            raise TeacherError("the synthetic teacher needs each request's reference `plan` and `code`; "
                               "the distill step provides them from the workflow instances")
        rng = random.Random(f"{request.seed}:{index}")
        found = self._discovery(request, index)
        code = with_discovery(context["code"], found.call) if found else context["code"]
        clean = Turn3(self._think(context, rng, found.note if found else None), context["plan"], code)
        metadata: dict[str, Any] = {"teacher": "synthetic", "clean": True, "noise_kind": None}
        if found:
            metadata["discovery"] = found.rule
        turn = clean
        # A repair (teacher feedback) after an execution error: synthetic, it regenerates
        # the turn from the reference; it reads the error only to choose its discovery call.
        if context.get("repair"):
            return Candidate(self._format(turn), request_index, index, metadata)
        if self.kinds and rng.random() < self.noise:
            ctx = NoiseContext(self.vocab, dict(context.get("params", {})),
                               dict(context.get("alternatives", {})), self._format, self.fields)
            order = list(self.kinds)
            rng.shuffle(order)
            for kind in order:
                corrupted = corrupt(clean, kind, ctx, rng)
                if corrupted is not None:
                    turn, metadata = corrupted, {**metadata, "clean": False, "noise_kind": kind}
                    break
        return Candidate(self._format(turn), request_index, index, metadata)

    def generate(self, requests: list[TeacherRequest]) -> list[Candidate]:
        return [self._candidate(request, r, i)
                for r, request in enumerate(requests) for i in range(request.n)]
