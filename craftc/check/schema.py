"""Schema checks: names, keys and grains, histories, field types, refs, cycles, ambiguous links, metrics."""

from __future__ import annotations

import re

from craftc.check.names import report_duplicates, unknown_name, where
from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.ir import KEY_KINDS
from craftc.lower import SCALAR_TYPES, expr_columns, snake_case
from craftc.syntax import EntityDecl, Expr, SchemaDecl

__all__ = ["check_schema", "METRIC_FUNCTIONS", "entity_columns"]

METRIC_FUNCTIONS = ("sum", "avg", "count", "count_distinct", "min", "max")
# The doc `craftc import` writes until someone describes the warehouse (W115).
IMPORT_PLACEHOLDER = re.compile(r"^Imported from \S")


def entity_columns(e: EntityDecl) -> dict[str, object]:
    """Logical column names of an entity's view: key, fields, and refs as `<ref>_id`."""
    cols: dict[str, object] = {e.keys[0].name: e.keys[0].name_span} if e.keys else {}
    for f in e.fields:
        cols.setdefault(f.name, f.name_span)
    for r in e.refs:
        cols.setdefault(r.name, r.name_span)
        cols.setdefault(f"{r.name}_id", r.name_span)
    return cols


def check_schema(decl: SchemaDecl, sink: DiagnosticSink) -> None:
    """Every schema-level problem, reported to ``sink``."""
    entities = report_duplicates(((e.name, e.name_span) for e in decl.entities), "entity", sink)
    by_name = {e.name: e for e in reversed(decl.entities)}
    # Entities with a grain and no key: nothing may ref them (E117).
    grained = {e.name: e.grains[0] for e in decl.entities if e.grains and not e.keys}
    for e in decl.entities:
        _check_entity(e, entities, grained, sink)
    _check_cycles(decl, by_name, sink)
    _check_tables(decl, sink)
    report_duplicates(((m.name, m.name_span) for m in decl.metrics), "metric", sink)
    columns = {name: entity_columns(e) for name, e in by_name.items()}
    for m in decl.metrics:
        _check_expr(m.expr, entities, columns, sink)
    _check_placeholder_docs(decl, sink)
    for _, span in decl.currencies[1:]:
        sink.error("E217", f"schema `{decl.name}` declares `currency` more than once", span,
                   "keep one `currency` line; a money field in another currency says so itself "
                   "(`field amount money -> column \"amt\" currency \"EUR\"`)")


def _check_placeholder_docs(decl: SchemaDecl, sink: DiagnosticSink) -> None:
    """W115: a doc that is still the text `craftc import` wrote reaches the prompt as is."""
    spans = decl.doc_spans or (decl.span,) * len(decl.docs)
    for doc, span in zip(decl.docs, spans):
        if IMPORT_PLACEHOLDER.match(doc):
            sink.warning("W115", f"the doc of schema `{decl.name}` is still the import placeholder "
                                 f"`{doc[:60]}`", span,
                         "describe the warehouse in a sentence or two: the model reads this doc in its "
                         "prompt")
    for e in decl.entities:
        for doc in e.docs:
            if IMPORT_PLACEHOLDER.match(doc):
                sink.warning("W115", f"the doc of entity `{e.name}` is still the import placeholder",
                             e.name_span, "say what one row of the table is")


def _check_tables(decl: SchemaDecl, sink: DiagnosticSink) -> None:
    views = {snake_case(e.name).lower() for e in decl.entities}
    _check_history_views(decl, views, sink)
    views |= {f"{snake_case(e.name)}_history".lower() for e in decl.entities if e.histories}
    for e in decl.entities:
        table, span = e.tables[0] if e.tables else (snake_case(e.name), e.name_span)
        if table.lower() in views:
            given = "its table" if e.tables else "with no `table` line, its table"
            sink.error("E114", f"entity `{e.name}`: {given} `{table}` has the name of a view", span,
                       f'put the physical table in a schema: `table "raw.{table.split(".")[-1]}"`')


# Types whose values have an order, so one version of a history is the latest.
VERSION_TYPES = ("timestamp", "date", "int", "float")


def _check_identity(e: EntityDecl, sink: DiagnosticSink) -> None:
    """E110: what one row is, said once: one `key` or one `grain`."""
    if not e.keys and not e.grains:
        sink.error("E110", f"entity `{e.name}` has no key or grain", e.name_span,
                   f'add `key id -> column "{e.name.lower()}_id"` when one column identifies a row; a table '
                   "with no such column (a daily report: one row per date and campaign) declares the members "
                   "that together do: `grain date, campaign`")
    for extra in e.keys[1:]:
        sink.error("E110", f"entity `{e.name}` declares more than one key", extra.name_span,
                   "keep one `key` line; other identifiers can be fields; when no one column identifies "
                   "a row, replace the keys by `grain a, b`")
    for extra in e.grains[1:]:
        sink.error("E110", f"entity `{e.name}` declares more than one grain", extra.span,
                   "keep one `grain` line listing every member: `grain date, campaign, ad`")
    if e.keys and e.grains:
        sink.error("E110", f"entity `{e.name}` declares both a key and a grain", e.grains[0].span,
                   "keep `key` when one column identifies a row (refs point at it); `grain` is for a "
                   "table with no such column")


def _check_grain(e: EntityDecl, sink: DiagnosticSink) -> None:
    """Each grain member is a field or ref of the entity, listed once, never null (E103, E101, E116)."""
    if not e.grains or e.keys:       # with a key too, E110 says which to keep
        return
    members = {f.name: f for f in e.fields} | {r.name: r for r in e.refs}
    report_duplicates(e.grains[0].members, f"member of `{e.name}`'s grain", sink)
    for name, span in e.grains[0].members:
        member = members.get(name)
        if member is None:
            unknown_name("E103", "field", name, span, {m.name: m.name_span for m in members.values()}, sink,
                         fallback=f"a grain lists fields and refs of `{e.name}`: declare `{name}` or fix "
                                  "the name", owner=e.name)
        elif member.nullable:
            sink.error("E116", f"`{name}` is in `{e.name}`'s grain but is nullable", span,
                       f"remove `nullable` from `{name}` (the grain's members are never null), or leave "
                       f"`{name}` out of the grain", (f"`{name}` is declared at {where(member.span)}",))


def _check_history(e: EntityDecl, sink: DiagnosticSink) -> None:
    """E118: a history picks each key's latest version by an ordered field."""
    for extra in e.histories[1:]:
        sink.error("E118", f"entity `{e.name}` declares `history` more than once", extra.span,
                   "keep one `history by FIELD` line")
    if not e.histories:
        return
    h = e.histories[0]
    if not e.keys:
        sink.error("E118", f"entity `{e.name}`: `history` needs a key, the id whose versions it keeps", h.span,
                   f'declare `key id -> column "..."` (the column that repeats, once per version) instead '
                   "of a grain")
    fields = {f.name: f for f in e.fields}
    version = fields.get(h.version)
    if version is None:
        unknown_name("E103", "field", h.version, h.version_span, {f.name: f.name_span for f in e.fields}, sink,
                     fallback=f"declare the version column as a field: `field {h.version} timestamp`",
                     owner=e.name)
    elif version.type_name not in VERSION_TYPES:
        sink.error("E118", f"entity `{e.name}`: the history's version `{h.version}` has type "
                           f"`{version.type_name}`, which has no order", h.version_span,
                   "version by a field that grows with each version: a timestamp (`modified_time`, "
                   "`updated_at`), a date or a number", (f"`{h.version}` is declared at {where(version.span)}",))


def _check_history_views(decl: SchemaDecl, views: set[str], sink: DiagnosticSink) -> None:
    """E101: a history's view `<view>_history` must not be another entity's view."""
    owners = {snake_case(e.name).lower(): e.name for e in decl.entities}
    for e in decl.entities:
        if not e.histories:
            continue
        view = f"{snake_case(e.name)}_history"
        if view.lower() in views:
            sink.error("E101", f"entity `{e.name}`: its history view `{view}` is the view of entity "
                               f"`{owners[view.lower()]}`", e.histories[0].span,
                       f"rename `{owners[view.lower()]}` (or `{e.name}`): agent code reads every version "
                       f"of `{e.name}` as `{view}`")


def _check_entity(e: EntityDecl, entities: dict, grained: dict, sink: DiagnosticSink) -> None:
    _check_identity(e, sink)
    _check_grain(e, sink)
    _check_history(e, sink)
    for _, span in e.tables[1:]:
        sink.error("E113", f"entity `{e.name}` declares `table` more than once", span,
                   "keep one `table` line")
    members = [(k.name, k.name_span) for k in e.keys] + [(r.name, r.name_span) for r in e.refs]
    members += [(f.name, f.name_span) for f in e.fields]
    report_duplicates(members, f"member of `{e.name}`", sink)
    _check_view_columns(e, sink)
    for k in e.keys[:1]:
        if k.type_name is not None and k.type_name not in KEY_KINDS:
            sink.error("E205", f"entity `{e.name}`: a key is `int` or `string`, not `{k.type_name}`", k.type_span,
                       f"write `key {k.name} string` for text ids (`cus_0001`), or `key {k.name}` for integers")
    for f in e.fields:
        _check_type(f, sink)
        if f.currency is not None and f.type_name != "money":
            sink.error("E217", f"field `{e.name}.{f.name}` is `{f.type_name}`, and only money has a currency",
                       f.currency[1], f"make the field `money`, or remove `currency \"{f.currency[0]}\"`")
    targets: dict[str, list] = {}
    for r in e.refs:
        if r.target not in entities:
            unknown_name("E102", "entity", r.target, r.target_span, entities, sink)
        elif r.target in grained:
            members = ", ".join(m for m, _ in grained[r.target].members)
            sink.error("E117", f"ref `{r.name}` of `{e.name}` points at `{r.target}`, which has a grain "
                               f"({members}) and no key", r.target_span,
                       f"a ref holds the target's key: ref the entities in `{r.target}`'s grain instead, or "
                       f"give `{r.target}` a key if one column identifies its rows")
        targets.setdefault(r.target, []).append(r)
    for target, refs in targets.items():
        undocumented = [r for r in refs if not r.doc]
        if len(refs) > 1 and undocumented:
            names = ", ".join(f"`{r.name}`" for r in refs)
            # Reported at the second link: the one that makes the first ambiguous.
            sink.warning("W111", f"ambiguous links from `{e.name}` to `{target}`: {names}",
                         refs[1].name_span,
                         f'give each ref a doc string: `ref {undocumented[0].name} -> {target} '
                         '"what this link means"`')


def _check_view_columns(e: EntityDecl, sink: DiagnosticSink) -> None:
    """A ref adds the view column `<ref>_id`: it must not be the name of another member, or
    the view would hold two columns of that name (DuckDB renames the second `<name>_1`)."""
    taken = {k.name.lower(): f"key `{k.name}`" for k in e.keys[:1]}
    taken.update({f.name.lower(): f"field `{f.name}`" for f in e.fields})
    for r in e.refs:
        column = f"{r.name}_id"
        other = taken.get(column.lower())
        if other is not None:
            sink.error("E101", f"entity `{e.name}`: ref `{r.name}` adds the view column `{column}`, "
                               f"which is the name of its {other}", r.name_span,
                       f"rename the ref (`ref {r.name}_ref -> {r.target}`) or the {other.split()[0]}")
        taken[column.lower()] = f"ref `{r.name}`"


def _check_type(f, sink: DiagnosticSink) -> None:
    if f.type_name not in SCALAR_TYPES:
        guess = did_you_mean(f.type_name, SCALAR_TYPES)
        sink.error("E205", f"unknown field type `{f.type_name}`", f.type_span,
                   f"did you mean `{guess}`?" if guess else f"one of {', '.join(SCALAR_TYPES)}")
    elif f.type_name == "enum":
        if not f.type_args:
            sink.error("E211", f"enum field `{f.name}` lists no values", f.type_span,
                       f"write `field {f.name} enum(a, b)`")
        seen: set[str] = set()
        for v in f.type_args:
            if v in seen:
                sink.error("E211", f"enum value `{v}` repeated in field `{f.name}`", f.type_span,
                           "list each value once")
            seen.add(v)
    elif f.type_args:
        sink.error("E211", f"type `{f.type_name}` takes no `(...)`", f.type_span,
                   f"write `field {f.name} {f.type_name}` (only enum lists values)")


def _check_cycles(decl: SchemaDecl, by_name: dict[str, EntityDecl], sink: DiagnosticSink) -> None:
    """Cycles of non-nullable refs: iterative DFS, linear in entities + refs."""
    state: dict[str, int] = {}          # 1 = on the stack, 2 = done
    for start in by_name:
        if state.get(start):
            continue
        stack = [(start, iter(_hard_refs(by_name[start], by_name)))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            ref, target = nxt
            if state.get(target) == 1:
                cycle = path[path.index(target):] + [target]
                sink.error("E109", "cyclic references: " + " -> ".join(f"`{c}`" for c in cycle),
                           ref.name_span,
                           f"mark `ref {ref.name}` nullable, or drop one ref of the cycle",
                           (f"`{target}` is defined at {where(by_name[target].name_span)}",))
            elif not state.get(target):
                state[target] = 1
                path.append(target)
                stack.append((target, iter(_hard_refs(by_name[target], by_name))))


def _hard_refs(e: EntityDecl, by_name: dict[str, EntityDecl]):
    return [(r, r.target) for r in e.refs if not r.nullable and r.target in by_name]


def _check_expr(expr: Expr, entities: dict, columns: dict, sink: DiagnosticSink) -> None:
    if expr.op == "call" and expr.text not in METRIC_FUNCTIONS:
        guess = did_you_mean(expr.text, METRIC_FUNCTIONS)
        sink.error("E210", f"unknown metric function `{expr.text}`", expr.span,
                   f"did you mean `{guess}`?" if guess else f"one of {', '.join(METRIC_FUNCTIONS)}")
    if expr.op == "column":
        if expr.entity not in entities:
            unknown_name("E102", "entity", expr.entity, expr.span, entities, sink)
        elif expr.field not in columns[expr.entity]:
            unknown_name("E103", "field", expr.field, expr.span, columns[expr.entity], sink,
                         owner=expr.entity)
        return
    for arg in expr.args:
        _check_expr(arg, entities, columns, sink)
