"""The syntax tree: what a .craft file says, before it is checked or resolved.

The parser's :class:`~craftc.to_syntax.ToSyntax` transformer turns a lark parse tree
into these plain frozen dataclasses, attaching a :class:`~craftc.ir.Span` to each. It
only builds nodes: nothing here judges whether a name exists or a value is in range
(that is lowering's and the checker's job, and they report diagnostics instead of
raising). This module does not import lark: a syntax tree read back from the parse
cache (:mod:`craftc.syntax_cache`) needs only these classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from craftc.ir import Span

__all__ = [
    "Value", "Setting", "Block", "Binding", "FieldDecl", "KeyDecl", "GrainDecl", "HistoryDecl", "RefDecl",
    "EntityDecl",
    "Expr", "MetricDecl", "SchemaDecl", "ParamDecl", "ExpectDecl", "TurnDecl",
    "WorkflowDecl", "ProfileDecl", "RecipeDecl", "SourceFile", "unquote", "parse_number", "parse_duration",
]

ValueKind = Literal["string", "number", "duration", "percent", "name", "env", "param", "compare"]


@dataclass(frozen=True)
class Value:
    """A literal value as written; ``text`` is the source spelling."""

    kind: ValueKind
    text: str
    span: Span
    qualifier: "Value | None" = None     # `timeout 10s` inside a list: the 10s

    @property
    def python(self) -> Any:
        """The value as Python data: str for strings/names/env, float or int for numbers."""
        if self.kind == "string":
            return unquote(self.text)
        if self.kind == "env":
            return unquote(self.text)
        if self.kind == "number":
            return parse_number(self.text)
        if self.kind == "duration":
            return parse_duration(self.text)
        if self.kind == "percent":
            return float(self.text[:-1]) / 100.0
        if self.kind == "param":
            return self.text[1:-1]
        return self.text


@dataclass(frozen=True)
class Setting:
    """``key value, value`` inside a block, or ``key { ... }`` (then ``block`` is set)."""

    key: str
    key_span: Span
    values: tuple[Value, ...] = ()
    block: "Block | None" = None
    span: Span | None = None


@dataclass(frozen=True)
class Block:
    """A settings block: teacher, judge, gate, reward, model, stage, eval, tool, format."""

    kind: str
    name: str | None
    name_span: Span | None
    settings: tuple[Setting, ...]
    span: Span


@dataclass(frozen=True)
class Binding:
    column: str
    column_span: Span
    scale: float | None = None


@dataclass(frozen=True)
class FieldDecl:
    name: str
    name_span: Span
    type_name: str
    type_args: tuple[str, ...]
    type_span: Span
    doc: str
    binding: Binding | None
    nullable: bool
    deprecated: str | None
    span: Span
    currency: tuple[str, Span] | None = None    # `currency "EUR"` on a money field


@dataclass(frozen=True)
class KeyDecl:
    name: str
    name_span: Span
    binding: Binding | None
    span: Span
    type_name: str | None = None        # `key id string`: the warehouse's id type
    type_span: Span | None = None


@dataclass(frozen=True)
class GrainDecl:
    """``grain date, campaign``: the members (fields or refs) that together identify a row."""

    members: tuple[tuple[str, Span], ...]
    span: Span


@dataclass(frozen=True)
class HistoryDecl:
    """``history by modified_time``: one row per version of each key, ordered by that field."""

    version: str
    version_span: Span
    span: Span


@dataclass(frozen=True)
class RefDecl:
    name: str
    name_span: Span
    target: str
    target_span: Span
    doc: str
    binding: Binding | None
    nullable: bool
    span: Span


@dataclass(frozen=True)
class EntityDecl:
    name: str
    name_span: Span
    docs: tuple[str, ...]
    tables: tuple[tuple[str, Span], ...]
    keys: tuple[KeyDecl, ...]
    refs: tuple[RefDecl, ...]
    fields: tuple[FieldDecl, ...]
    deprecated: str | None
    span: Span
    grains: tuple[GrainDecl, ...] = ()
    histories: tuple[HistoryDecl, ...] = ()


@dataclass(frozen=True)
class Expr:
    """A metric expression node: number, column (entity.field), call, neg or a binary op."""

    op: str                          # number | column | call | neg | add | sub | mul | div
    args: tuple["Expr", ...] = ()
    text: str = ""                   # number text, function name
    entity: str = ""
    field: str = ""
    span: Span | None = None


@dataclass(frozen=True)
class MetricDecl:
    name: str
    name_span: Span
    doc: str
    expr: Expr
    span: Span


@dataclass(frozen=True)
class SchemaDecl:
    name: str
    version: int
    docs: tuple[str, ...]
    entities: tuple[EntityDecl, ...]
    metrics: tuple[MetricDecl, ...]
    span: Span
    doc_spans: tuple[Span, ...] = ()     # where each of ``docs`` is written
    currencies: tuple[tuple[str, Span], ...] = ()   # `currency "USD"` lines (one allowed)


@dataclass(frozen=True)
class ParamDecl:
    name: str
    name_span: Span
    kind: Literal["range", "column", "choice"]
    low: Value | None = None
    high: Value | None = None
    entity: str = ""
    field: str = ""
    source_span: Span | None = None
    choices: tuple[Value, ...] = ()
    span: Span | None = None


@dataclass(frozen=True)
class ExpectDecl:
    """An ``expect`` line, or (``line == "check"``) a ``check`` line."""

    kind: str
    kind_span: Span
    args: tuple[Value | tuple[str, ...], ...]
    span: Span
    line: Literal["expect", "check"] = "expect"


@dataclass(frozen=True)
class TurnDecl:
    asks: tuple[Value, ...]
    solution: Value | None
    expects: tuple[ExpectDecl, ...]
    span: Span


@dataclass(frozen=True)
class WorkflowDecl:
    kind: Literal["workflow", "conversation"]
    name: str
    name_span: Span
    docs: tuple[str, ...]
    params: tuple[ParamDecl, ...]
    uses: tuple[tuple[str, str, Span], ...]       # (entity|metric, name, span)
    turns: tuple[TurnDecl, ...]
    span: Span


@dataclass(frozen=True)
class ProfileDecl:
    name: str
    name_span: Span
    settings: tuple[Setting, ...]
    blocks: tuple[Block, ...]
    span: Span
    # `profile NAME extends BASE`: the profile whose settings come first, and where it is named.
    extends: str | None = None
    extends_span: Span | None = None


@dataclass(frozen=True)
class RecipeDecl:
    name: str
    name_span: Span
    uses_schema: tuple[Value, ...]
    settings: tuple[Setting, ...]
    workflows: tuple[WorkflowDecl, ...]
    blocks: tuple[Block, ...]
    profiles: tuple[ProfileDecl, ...]
    span: Span


@dataclass(frozen=True)
class SourceFile:
    file: str
    schemas: tuple[SchemaDecl, ...] = ()
    recipes: tuple[RecipeDecl, ...] = ()


# ---------------------------------------------------------------- literal helpers


def unquote(text: str) -> str:
    """The content of a string literal (``"..."`` or ``\"\"\"...\"\"\"``), escapes resolved."""
    if text.startswith('"""'):
        return text[3:-3]
    body = text[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(escapes.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parse_number(text: str) -> int | float:
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)


_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a duration literal: ``10s``, ``500ms``, ``2m``, ``1h``."""
    unit = "ms" if text.endswith("ms") else text[-1]
    return float(text[: -len(unit)]) * _UNIT_SECONDS[unit]
