"""The synthetic teacher: reference solutions plus a seeded, labelled noise model.

It needs no model and no network, so a recipe runs end to end on a laptop, and
because every corrupted candidate carries its ``noise_kind`` the funnel can show
which gate caught which failure. A clean candidate is the instance's reference PLAN
and CODE with a short scratchpad written from the question and its params.

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
from typing import Any

from craftc.ir import BlockFormat, Schema
from runtime.distill.blocks import format_turn
from runtime.distill.noise import NOISE_KINDS, NoiseContext, Turn3, corrupt
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
    """Builds candidates from reference solutions; ``noise`` is the corrupted share."""

    name = "synthetic teacher"

    def __init__(self, schema: Schema, fmt: BlockFormat, noise: float = 0.5,
                 kinds: tuple[str, ...] = NOISE_KINDS):
        if not 0.0 <= noise <= 1.0:
            raise TeacherError(f"synthetic teacher: `noise` must be between 0 and 1, got {noise}; "
                               "set `noise 0.5` in the teacher block")
        unknown = [k for k in kinds if k not in NOISE_KINDS]
        if unknown:
            raise TeacherError(f"synthetic teacher: unknown noise kind `{unknown[0]}`; "
                               f"known: {', '.join(NOISE_KINDS)}")
        self.fmt, self.noise, self.kinds = fmt, noise, tuple(kinds)
        self.vocab = SchemaVocabulary.from_schema(schema)

    def _think(self, context: dict[str, Any], rng: random.Random) -> str:
        ask = context.get("ask", "")
        params = context.get("params", {})
        lines = [rng.choice(_OPENINGS).format(ask=ask)]
        if params:
            lines.append("Parameters: " + ", ".join(f"{k} = {v}" for k, v in params.items()) + ".")
        entities = [split_camel(name) for name in self.vocab.entities_named(context.get("plan", ""))]
        if entities:
            lines.append("This touches " + ", ".join(dict.fromkeys(entities)) + ".")
        lines.append(rng.choice(_CLOSINGS))
        return "\n".join(lines)

    def _format(self, turn: Turn3) -> str:
        return turn.raw if turn.raw is not None else format_turn(turn.think, turn.plan, turn.code, self.fmt)

    def _candidate(self, request: TeacherRequest, request_index: int, index: int) -> Candidate:
        context = request.context
        if "plan" not in context or "code" not in context:
            raise TeacherError("the synthetic teacher needs each request's reference `plan` and `code`; "
                               "the distill step provides them from the workflow instances")
        rng = random.Random(f"{request.seed}:{index}")
        clean = Turn3(self._think(context, rng), context["plan"], context["code"])
        metadata: dict[str, Any] = {"teacher": "synthetic", "clean": True, "noise_kind": None}
        turn = clean
        # A repair (teacher feedback) after an execution error: synthetic, it regenerates
        # the turn from the reference instead of reading the error.
        if context.get("repair"):
            return Candidate(self._format(turn), request_index, index, metadata)
        if self.kinds and rng.random() < self.noise:
            ctx = NoiseContext(self.vocab, dict(context.get("params", {})),
                               dict(context.get("alternatives", {})), self._format)
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
