"""``check`` lines typed against the turn's result columns and the workflow's params.

A result's columns are what the turn declares with ``check columns (...)`` (or
``expect columns (...)``): a check that names another column is E311 with a
did-you-mean, a param the workflow does not declare is E312, an operand of the wrong
type for its comparison (text where a number is needed) is E313, and
``subset_of previous`` where there is no previous turn is E314.
"""

from __future__ import annotations

from craftc.check.names import unknown_name
from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.ir import Expectation, Span
from craftc.lower import lower_expectation
from craftc.result_checks import CHECK_KINDS, CHECK_USAGE, check_operands, lower_check
from craftc.syntax import ExpectDecl, ParamDecl, TurnDecl, WorkflowDecl

__all__ = ["check_turn_checks", "declared_columns", "NUMERIC_FIELD_TYPES"]

NUMERIC_FIELD_TYPES = ("int", "float", "money")
_ORDERING_OPS = ("<", "<=", ">", ">=", "between", "within_days")


def declared_columns(t: TurnDecl) -> dict[str, Span]:
    """The result columns a turn declares (``check``/``expect columns``), lower-cased."""
    out: dict[str, Span] = {}
    for e in t.expects:
        lowered = lower_check(e) if e.line == "check" else lower_expectation(e)
        if lowered is not None and lowered.kind == "columns":
            for name in lowered.columns:
                out.setdefault(name.lower(), e.span)
    return out


def check_turn_checks(w: WorkflowDecl, index: int, params: dict[str, ParamDecl], field_types: dict[str, str],
                      sink: DiagnosticSink) -> None:
    """Every problem of turn ``index``'s ``check`` lines.

    Args:
        w: The workflow or conversation.
        index: 0-based turn index.
        params: The workflow's params by name.
        field_types: Param name -> the schema type of its source field (column params).
        sink: Where diagnostics go.
    """
    turn = w.turns[index]
    columns = declared_columns(turn)
    for e in turn.expects:
        if e.line != "check":
            continue
        lowered = lower_check(e)
        if lowered is None:
            _bad_check(e, sink)
            continue
        _check_columns(w, turn, e, lowered, columns, sink)
        _check_params(w, e, lowered, params, field_types, sink)
        if lowered.kind == "subset_of_previous":
            _check_subset(w, index, e, lowered, sink)


def _bad_check(e: ExpectDecl, sink: DiagnosticSink) -> None:
    if e.kind not in CHECK_KINDS:
        guess = did_you_mean(e.kind, CHECK_KINDS)
        sink.error("E310", f"unknown check `{e.kind}`", e.kind_span,
                   f"did you mean `{guess}`?" if guess else f"one of {', '.join(CHECK_KINDS)}")
        return
    sink.error("E310", f"bad arguments for `check {e.kind}`", e.span, f"write `{CHECK_USAGE[e.kind]}`")


def _named_columns(e: ExpectDecl, lowered: Expectation) -> list[tuple[str, Span]]:
    """(column, span) of each column a check names, located at the word itself."""
    if lowered.kind == "columns":
        return []
    names = list(lowered.columns) + ([lowered.column] if lowered.column else [])
    spans = {a.text: a.span for a in e.args if hasattr(a, "kind") and a.kind == "name"}
    return [(n, spans.get(n, e.span)) for n in names]


def _check_columns(w: WorkflowDecl, turn: TurnDecl, e: ExpectDecl, lowered: Expectation,
                   columns: dict[str, Span], sink: DiagnosticSink) -> None:
    for name, span in _named_columns(e, lowered):
        if name.lower() in columns:
            continue
        if not columns:
            sink.error("E311", f"check names column `{name}`, and this turn of `{w.name}` declares no "
                       "result columns", span, f"declare them: `check columns (..., {name})`")
        else:
            unknown_name("E311", "result column", name, span, columns, sink,
                         fallback=f"add `{name}` to the turn's `check columns (...)`", owner=w.name)


def _check_params(w: WorkflowDecl, e: ExpectDecl, lowered: Expectation, params: dict[str, ParamDecl],
                  field_types: dict[str, str], sink: DiagnosticSink) -> None:
    param_spans = {a.python: a.span for a in e.args if hasattr(a, "kind") and a.kind == "param"}
    needs_number = lowered.kind == "row_count" or lowered.op in _ORDERING_OPS
    known = {name: p.name_span for name, p in params.items()}
    for value in check_operands(lowered):
        span = value.span or param_spans.get(value.param, e.span)
        if value.param is not None:
            if value.param not in params:
                unknown_name("E312", "param", value.param, param_spans.get(value.param, e.span), known, sink,
                             fallback=f"declare `param {value.param} ...` in `{w.name}`", owner=w.name)
                continue
            kind = _param_kind(params[value.param], field_types)
            if needs_number and kind != "number":
                sink.error("E313", f"`{_phrase(lowered)}` needs a number, and param `{value.param}` is {kind}",
                           span, "compare text with `==` or `!=`, or use a numeric param")
            elif lowered.kind == "row_count" and not _integer_param(params[value.param]):
                sink.error("E313", f"row bound `{{{value.param}}}` must be a whole number", span,
                           "use an integer param such as `param n in 3..10`")
        elif needs_number and not isinstance(value.literal, float):
            sink.error("E313", f"`{_phrase(lowered)}` needs a number, not text", span,
                       "write a number, or compare text with `==` or `!=`")


def _phrase(lowered: Expectation) -> str:
    if lowered.kind == "row_count":
        return "max_rows" if (lowered.max_rows_param or lowered.max_rows is not None) else "min_rows"
    return {"within_days": "within ... days"}.get(lowered.op or "", lowered.op or lowered.kind)


def _param_kind(p: ParamDecl, field_types: dict[str, str]) -> str:
    if p.kind == "range":
        return "number"
    if p.kind == "choice":
        return "number" if p.choices and all(v.kind == "number" for v in p.choices) else "text"
    return "number" if field_types.get(p.name) in NUMERIC_FIELD_TYPES else "text"


def _integer_param(p: ParamDecl) -> bool:
    if p.kind == "range":
        return isinstance(p.low.python, int) and isinstance(p.high.python, int)
    return p.kind == "choice" and all(v.kind == "number" and isinstance(v.python, int) for v in p.choices)


def _check_subset(w: WorkflowDecl, index: int, e: ExpectDecl, lowered: Expectation, sink: DiagnosticSink) -> None:
    if w.kind != "conversation" or index == 0:
        sink.error("E314", "`check subset_of previous` on a turn with no previous turn", e.span,
                   "use it on a conversation's second or later turn")
        return
    previous = declared_columns(w.turns[index - 1])
    for name in lowered.columns:
        if previous and name.lower() not in previous:
            unknown_name("E311", "column of the previous turn", name, e.span, previous, sink,
                         fallback=f"declare `{name}` in the previous turn's `check columns (...)`")
