"""Workflow checks: names, uses, params, template slots, solutions, expectations."""

from __future__ import annotations

import re
from pathlib import Path

from craftc.check.names import report_duplicates, unknown_name, where
from craftc.check.solution_sql import (
    frame_column_misses, missing_reads, schema_views, solution_sql_problems, views_key,
)
from craftc.diagnostics import DiagnosticSink, did_you_mean, span_at
from craftc.check.result_checks import check_turn_checks
from craftc.ir import REFERENCE_KINDS, Schema, Span
from craftc.lower import EXPECT_KINDS, lower_expectation
from craftc.syntax import ParamDecl, RecipeDecl, TurnDecl, WorkflowDecl

__all__ = ["check_workflows", "template_slots", "solution_params"]

_SLOT = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
_SOLUTION_PARAM = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template_slots(text: str) -> list[str]:
    """The ``{slot}`` names of a question phrasing, in order.

    Example:
        >>> template_slots("Top {n} campaigns of {advertiser}")
        ['n', 'advertiser']
    """
    return _SLOT.findall(text)


def solution_params(text: str) -> list[tuple[str, int, int]]:
    """``${name}`` uses in a solution: (name, line, col), 1-based."""
    out = []
    for m in _SOLUTION_PARAM.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        out.append((m.group(1), line, col))
    return out


class _SchemaIndex:
    """Names of the schema in dicts, so each lookup is O(1) however large the schema."""

    def __init__(self, schema: Schema):
        self.schema_label = f"`{schema.name}` version {schema.version}"
        self.views = schema_views(schema.entities)
        self.views_key = views_key(self.views)
        self.entities = {e.name: e for e in schema.entities}
        self.entity_spans = {e.name: e.span for e in schema.entities}
        self.metrics = {m.name: m.span for m in schema.metrics}
        self.columns: dict[str, dict[str, Span | None]] = {}
        self.deprecated: dict[tuple[str, str], str] = {}
        for e in schema.entities:
            cols: dict[str, Span | None] = {e.key.name: e.key.span} if e.key is not None else {}
            for f in e.fields:
                cols[f.name] = f.span
                if f.deprecated is not None:
                    self.deprecated[(e.name, f.name)] = f.deprecated
            for r in e.refs:
                cols.setdefault(r.name, r.span)
                cols.setdefault(f"{r.name}_id", r.span)
            self.columns[e.name] = cols


def check_workflows(decl: RecipeDecl, schema: Schema, root: Path, sink: DiagnosticSink,
                    sources: dict[str, str]) -> None:
    """Every workflow-level problem of a recipe, reported to ``sink``."""
    index = _SchemaIndex(schema)
    report_duplicates(((w.name, w.name_span) for w in decl.workflows), "workflow", sink)
    for w in decl.workflows:
        _check_workflow(w, index, root, sink, sources)


def _check_workflow(w: WorkflowDecl, index: _SchemaIndex, root: Path, sink: DiagnosticSink,
                    sources: dict[str, str]) -> None:
    params = report_duplicates(((p.name, p.name_span) for p in w.params),
                               f"param of `{w.name}`", sink)
    _check_uses(w, index, sink)
    for p in w.params:
        _check_param(p, index, sink)
    if w.kind == "conversation" and not w.turns:
        sink.error("E308", f"conversation `{w.name}` has no turns", w.name_span,
                   'add `turn "question" solution "path.py"`')
    if w.kind == "workflow" and len(w.turns) > 1:
        sink.error("E306", f"workflow `{w.name}` has more than one solution",
                   w.turns[1].solution.span,
                   "keep one `solution`; a multi-turn dialogue is a `conversation`")
    asked: set[str] = set()
    declared = {p.name: p for p in w.params}
    field_types = {p.name: _field_type(p, index) for p in w.params if p.kind == "column"}
    for n, t in enumerate(w.turns[:1] if w.kind == "workflow" else w.turns):
        asked.update(_check_turn(w, t, params, index, root, sink, sources))
        check_turn_checks(w, n, declared, field_types, sink)
    for p in w.params:
        if p.name not in asked:
            sink.warning("W302", f"param `{p.name}` of `{w.name}` appears in no question",
                         p.name_span, f"use `{{{p.name}}}` in an `ask` phrasing, or remove it")


def _check_uses(w: WorkflowDecl, index: _SchemaIndex, sink: DiagnosticSink) -> None:
    for kind, name, span in w.uses:
        if kind == "metric":
            if name not in index.metrics:
                unknown_name("E104", "metric", name, span, index.metrics, sink)
        elif name not in index.entities:
            unknown_name("E102", "entity", name, span, index.entity_spans, sink)
        elif index.entities[name].deprecated is not None:
            sink.warning("W112", f"entity `{name}` is deprecated", span,
                         index.entities[name].deprecated)


def _check_param(p: ParamDecl, index: _SchemaIndex, sink: DiagnosticSink) -> None:
    if p.kind == "range" and p.low.python > p.high.python:
        sink.error("E206", f"param `{p.name}`: range {p.low.text}..{p.high.text} is empty",
                   p.low.span, f"write `param {p.name} in {p.high.text}..{p.low.text}`")
    elif p.kind == "choice":
        kinds = {"number" if v.kind == "number" else "text" for v in p.choices}
        if len(kinds) > 1:
            odd = next(v for v in p.choices if ("number" if v.kind == "number" else "text")
                       != ("number" if p.choices[0].kind == "number" else "text"))
            sink.error("E207", f"param `{p.name}` mixes numbers and text", odd.span,
                       "make every choice a number, or every choice a string")
        dupes = [v for i, v in enumerate(p.choices) if v.python in [c.python for c in p.choices[:i]]]
        for v in dupes:
            sink.warning("W305", f"choice `{v.text}` repeated in param `{p.name}`", v.span,
                         "list each choice once")
    elif p.kind == "column":
        if p.entity not in index.entities:
            unknown_name("E102", "entity", p.entity, p.source_span, index.entity_spans, sink)
        elif p.field not in index.columns[p.entity]:
            unknown_name("E103", "field", p.field, p.source_span, index.columns[p.entity], sink,
                         owner=p.entity)
        elif (p.entity, p.field) in index.deprecated:
            sink.warning("W112", f"field `{p.entity}.{p.field}` is deprecated", p.source_span,
                         index.deprecated[(p.entity, p.field)])


def _check_turn(w: WorkflowDecl, t: TurnDecl, params: dict[str, Span], index: _SchemaIndex, root: Path,
                sink: DiagnosticSink, sources: dict[str, str]) -> set[str]:
    """Checks one turn; returns the param names its phrasings mention."""
    if not t.asks:
        sink.error("E306", f"`{w.name}` has no question", w.name_span,
                   'add `ask "..."` with the analyst\'s question')
    seen: dict[str, Span] = {}
    used: set[str] = set()
    for a in t.asks:
        text = a.python
        if text in seen:
            sink.warning("W305", f"duplicate phrasing in `{w.name}`", a.span,
                         f"reword it; the same text is at {where(seen[text])}")
        seen.setdefault(text, a.span)
        for slot in template_slots(text):
            used.add(slot)
            if slot not in params:
                offset = a.text.find("{" + slot + "}")
                span = span_at(a.span.file, a.span.line, a.span.col + max(offset, 0), len(slot) + 2)
                unknown_name("E301", "template slot", slot, span, params, sink,
                             fallback=f"declare `param {slot} ...` in `{w.name}`")
    checks = [e for e in t.expects if e.line == "check"]
    if t.solution is None and not checks:
        sink.error("E306", f"`{w.name}` has neither a solution nor checks", t.span if w.kind == "conversation"
                   else w.name_span, 'add `solution "path/to/solution.py"` (relative to the recipe), or '
                   '`check ...` lines the result must pass (`check columns (a, b)`, `check all x >= 0`)')
    elif t.solution is not None:
        _check_solution(w, t, params, index, root, sink, sources)
    for e in t.expects:
        if e.line == "check":
            continue
        lowered = lower_expectation(e)
        if lowered is None:
            _bad_expectation(e, sink)
        elif lowered.kind in REFERENCE_KINDS and t.solution is None and checks:
            sink.error("E306", f"`expect {e.kind}` in `{w.name}` compares with a reference solution, "
                       "and this turn has none", e.span,
                       'add `solution "path.py"`, or drop the line: without a reference the checks '
                       "and the candidates' agreement decide")
    return used


def _field_type(p: ParamDecl, index: _SchemaIndex) -> str:
    """The schema type of a column param's source field ("" when unknown)."""
    entity = index.entities.get(p.entity)
    field = next((f for f in entity.fields if f.name == p.field), None) if entity else None
    return field.type.kind if field else ""


def _check_solution(w: WorkflowDecl, t: TurnDecl, params: dict[str, Span], index: _SchemaIndex,
                    root: Path, sink: DiagnosticSink, sources: dict[str, str]) -> None:
    rel = t.solution.python
    path = root / rel
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = "not UTF-8 text" if isinstance(err, UnicodeDecodeError) else \
            (err.strerror or type(err).__name__).lower()
        sink.error("E304", f"solution file `{rel}` of `{w.name}`: {reason}", t.solution.span,
                   "solution paths are relative to the recipe file; create the file or fix the path")
        return
    name = Path(rel).as_posix()
    for param, line, col in solution_params(text):
        if param not in params:
            sources.setdefault(name, text)
            unknown_name("E303", "param", param, span_at(name, line, col, len(param) + 3),
                         params, sink, fallback=f"declare `param {param} ...` in `{w.name}`")
    _check_solution_reads(w, t, text, name, index, sink, sources)


def _check_solution_reads(w: WorkflowDecl, t: TurnDecl, text: str, name: str, index: _SchemaIndex,
                          sink: DiagnosticSink, sources: dict[str, str]) -> None:
    """E309 in the solution file, at each view or column it reads that the schema lacks."""
    named_at = f"the solution of `{w.name}` is named at {where(t.solution.span)}"
    for read in missing_reads(text, index.views, index.views_key):
        if read.column:
            thing = f"`{read.view}.{read.column}`"
            guess = did_you_mean(read.column, index.views[read.view])
            mapped = f"map it to its new name (`{guess}`?)" if guess else "map it to its new name"
        else:
            thing = f"view `{read.view}`"
            guess = did_you_mean(read.view, index.views)
            mapped = f"map it to its new entity (`{guess}`?)" if guess else "map it to its new entity"
        sources.setdefault(name, text)
        sink.error("E309", f"solution of workflow `{w.name}` reads {thing}, which schema "
                   f"{index.schema_label} does not have",
                   span_at(name, read.line, read.col, len(read.column or read.view)),
                   f"restore it in the schema, {mapped}, or update `{name}` (line {read.line})",
                   (named_at,))
    for problem in solution_sql_problems(text, index.views, index.views_key):
        sources.setdefault(name, text)
        if problem.kind == "syntax":
            sink.error("E318", f"the SQL of the solution of workflow `{w.name}` does not parse: {problem.message}",
                       span_at(name, problem.line, problem.col),
                       f"fix the query in `{name}` (line {problem.line}); it is parsed as DuckDB SQL",
                       (named_at,))
        else:
            guess = did_you_mean(problem.name.lower(), sorted(_function_names()))
            sink.error("E319", f"the SQL of the solution of workflow `{w.name}` calls `{problem.name}`, "
                               "which is not a DuckDB function",
                       span_at(name, problem.line, problem.col, len(problem.name)),
                       f"did you mean `{guess}`?" if guess else
                       "use a function of DuckDB's catalog (`SELECT function_name FROM duckdb_functions()`)",
                       (named_at,))
    for miss in frame_column_misses(text, index.views, index.views_key):
        guess = did_you_mean(miss.column, miss.columns)
        sources.setdefault(name, text)
        sink.error("E309", f"solution of workflow `{w.name}` reads column `{miss.column}` of "
                   f"`{miss.frame}`, which its {miss.origin} does not return",
                   span_at(name, miss.line, miss.col, len(miss.column)),
                   f"did you mean `{guess}`?" if guess else
                   f"select `{miss.column}` in the query, or read one of: {', '.join(miss.columns)}",
                   (named_at,))


def _bad_expectation(e, sink: DiagnosticSink) -> None:
    if e.kind not in EXPECT_KINDS:
        guess = did_you_mean(e.kind, EXPECT_KINDS)
        sink.error("E307", f"unknown expectation `{e.kind}`", e.kind_span,
                   f"did you mean `{guess}`?" if guess else f"one of {', '.join(EXPECT_KINDS)}")
        return
    usage = {
        "same_rows": "expect same_rows [ordered] [tolerance 1e-6]",
        "same_rows_as": "expect same_rows_as solution [ordered] [tolerance 1e-6]",
        "columns": "expect columns (a, b)", "min_rows": "expect min_rows 1",
        "max_rows": "expect max_rows 10", "nonempty": "expect nonempty",
    }[e.kind]
    sink.error("E307", f"bad arguments for `expect {e.kind}`", e.span, f"write `{usage}`")


def _function_names() -> frozenset[str]:
    from craftc.check.solution_sql import duckdb_function_names

    return duckdb_function_names()
