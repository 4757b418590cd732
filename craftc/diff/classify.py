"""Classify each schema change between two plans by what it costs a trained model.

Agent code and reference solutions read only the logical views, so a change is:

- ``binding-only``: a physical table, column or scale moved under the same logical
  name; the views hide it, no retraining is needed;
- ``doc-only``: a doc string, a deprecation or the schema version; the logical names
  are unchanged, only the stuffed baseline's prompt reads it;
- ``additive``: a new entity, field, ref, metric or enum value; existing data stays
  valid, the workflows that use the new part need new data;
- ``breaking``: a logical name removed or renamed, a type or a metric's formula
  changed; the workflows whose solutions or params read it must be fixed, and the
  model must be retrained because it learned the old names.

Example:
    >>> old = {"recipe": {"workflows": [], "schema": {"name": "s", "version": 1, "entities": [], "metrics": []}}}
    >>> new = {"recipe": {"workflows": [], "schema": {"name": "s", "version": 1, "entities": [],
    ...        "metrics": [{"name": "m", "expr": "sum(A.x)", "doc": "", "entities": ["A"]}]}}}
    >>> [(c.address, c.category) for c in classify_schema(old, new, {}, {})]
    [('metric.m', 'additive')]
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from craftc.check.solution_sql import schema_views, solution_reads
from craftc.diff.model import SchemaChange
from craftc.diff.renames import pair_renames, same_entity, same_member, same_metric

__all__ = ["CATEGORIES", "classify_schema", "schema_verdict"]

CATEGORIES = ("binding-only", "doc-only", "additive", "breaking")    # from cheapest to dearest
_MEMBERS = ("fields", "refs")


class _Usage:
    """Which workflows of one plan read which views, columns, params and metrics."""

    def __init__(self, plan: dict, files: Mapping[str, bytes]):
        recipe = plan["recipe"]
        schema = recipe["schema"]
        self.views = {e["name"]: e["view"] for e in schema.get("entities", [])}
        self.metrics = {m["name"]: m.get("expr", "") for m in schema.get("metrics", [])}
        catalog = schema_views(schema.get("entities", []))
        self.workflows = recipe.get("workflows", [])
        self.reads: dict[str, set[tuple[str, str]]] = {}
        for w in self.workflows:
            reads = set()
            for turn in w.get("turns", []):
                text = files.get(turn.get("solution", ""), b"").decode("utf-8", errors="replace")
                reads |= {(r.view, r.column) for r in solution_reads(text, catalog)}
            self.reads[w["name"]] = reads

    def _view(self, entity: str) -> str:
        # An entity the plan lacks still has its conventional view name.
        return self.views.get(entity) or "".join("_" + c.lower() if c.isupper() else c for c in entity).lstrip("_")

    def of_entity(self, entity: str) -> tuple[str, ...]:
        view = self._view(entity)
        return tuple(sorted(w["name"] for w in self.workflows
                            if entity in w.get("entities", []) or (view, "") in self.reads[w["name"]]
                            or any(p.get("entity") == entity for p in w.get("params", []))))

    def of_column(self, entity: str, column: str) -> tuple[str, ...]:
        view, dotted = self._view(entity), f"{entity}.{column}"
        metrics = {m for m, expr in self.metrics.items() if dotted in expr}
        return tuple(sorted(w["name"] for w in self.workflows
                            if (view, column) in self.reads[w["name"]]
                            or any((p.get("entity"), p.get("field")) == (entity, column) for p in w.get("params", []))
                            or metrics & set(w.get("metrics", []))))

    def of_metric(self, metric: str) -> tuple[str, ...]:
        return tuple(sorted(w["name"] for w in self.workflows if metric in w.get("metrics", [])))


def _show(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _by_name(items) -> dict[str, dict]:
    return {item["name"]: item for item in items}


def _member_changes(entity: str, kind: str, old: dict, new: dict, before: _Usage, after: _Usage) -> list[SchemaChange]:
    """Changes of one entity's fields or refs, pairing a removal and an addition on one column as a rename."""
    noun = kind[:-1]
    out = []
    removed = [n for n in old if n not in new]
    renamed = pair_renames(old, new, same_member)
    added = [n for n in new if n not in old and n not in renamed.values()]
    for name in removed:
        address = f"entity.{entity}.{kind}.{name}"
        column = name if kind == "fields" else f"{name}_id"
        users = before.of_column(entity, column)
        if name in renamed:
            out.append(SchemaChange(address, "breaking", f"{noun} renamed `{name}` -> `{renamed[name]}`", users,
                                    f"update the workflows to read `{renamed[name]}`, or keep `{name}` as the "
                                    f"logical name bound to the new column; retrain"))
        else:
            out.append(SchemaChange(address, "breaking", f"{noun} removed", users,
                                    f"restore `{entity}.{name}`, map it to its new name, or update the workflows "
                                    f"that read it; retrain"))
    for name in added:
        column = name if kind == "fields" else f"{name}_id"
        out.append(SchemaChange(f"entity.{entity}.{kind}.{name}", "additive", f"{noun} added",
                                after.of_column(entity, column),
                                "distill data for workflows that use it"))
    for name in sorted(set(old) & set(new)):
        out += _member_diff(entity, kind, name, old[name], new[name], before)
    return out


def _member_diff(entity: str, kind: str, name: str, old: dict, new: dict, before: _Usage) -> list[SchemaChange]:
    address = f"entity.{entity}.{kind}.{name}"
    column = name if kind == "fields" else f"{name}_id"
    out = []
    physical = [f"{key} {_show(old.get(key))} -> {_show(new.get(key))}" for key in ("column", "scale")
                if old.get(key) != new.get(key)]
    if physical:
        out.append(SchemaChange(address, "binding-only", "; ".join(physical)))
    for key in ("type", "target"):
        if old.get(key) != new.get(key):
            out.append(_type_change(address, key, old[key], new[key], before.of_column(entity, column)))
    if old.get("nullable") != new.get("nullable"):
        if new.get("nullable"):
            out.append(SchemaChange(address, "breaking", "may now be empty (nullable)", before.of_column(entity, column),
                                    "check the workflows' solutions handle empty values; retrain"))
        else:
            out.append(SchemaChange(address, "doc-only", "no longer nullable"))
    if old.get("deprecated") != new.get("deprecated"):
        note = f"deprecated: {new['deprecated']}" if new.get("deprecated") else "no longer deprecated"
        out.append(SchemaChange(address, "doc-only", note, before.of_column(entity, column),
                                "move the listed workflows off it before it is removed" if new.get("deprecated") else ""))
    if old.get("doc") != new.get("doc"):
        out.append(SchemaChange(address, "doc-only", "doc changed"))
    if old.get("currency") != new.get("currency"):
        out.append(SchemaChange(address, "doc-only", f"currency {_show(old.get('currency'))} -> "
                                                     f"{_show(new.get('currency'))}"))
    return out


def _type_change(address: str, key: str, old, new, users: tuple[str, ...]) -> SchemaChange:
    if key == "type" and old.get("kind") == new.get("kind") == "enum" \
            and set(old.get("values", [])) <= set(new.get("values", [])):
        extra = [v for v in new["values"] if v not in old["values"]]
        return SchemaChange(address, "additive", f"enum values added: {', '.join(extra)}", users,
                            "distill data for the new values if a workflow asks about them")
    shown = (lambda t: t.get("kind", "")) if key == "type" else (lambda t: t)
    return SchemaChange(address, "breaking", f"{key} {shown(old)} -> {shown(new)}", users,
                        "re-check the workflows' expectations on the new values; retrain")


def _entity_changes(name: str, old: dict, new: dict, before: _Usage, after: _Usage) -> list[SchemaChange]:
    address = f"entity.{name}"
    out = []
    if old.get("table") != new.get("table"):
        out.append(SchemaChange(address, "binding-only", f"table {_show(old.get('table'))} -> {_show(new.get('table'))}"))
    old_key, new_key = old.get("key") or {}, new.get("key") or {}
    if old_key and new_key and old_key.get("column") != new_key.get("column"):
        out.append(SchemaChange(f"{address}.key", "binding-only",
                                f"column {_show(old_key.get('column'))} -> {_show(new_key.get('column'))}"))
    if old_key and new_key and old_key.get("type", "int") != new_key.get("type", "int"):  # ids compared and joined
        out.append(SchemaChange(f"{address}.key", "breaking",
                                f"type {old_key.get('type', 'int')} -> {new_key.get('type', 'int')}",
                                before.of_entity(name), "check the workflows' solutions compare its ids as "
                                "the new type; retrain"))
    if old_key.get("name") != new_key.get("name") or old.get("view") != new.get("view"):
        out.append(SchemaChange(address, "breaking", "key or view renamed", before.of_entity(name),
                                "update the workflows that read it; retrain"))
    if old.get("grain", []) != new.get("grain", []):
        out.append(SchemaChange(address, "breaking", f"grain {_show(old.get('grain', []))} -> "
                                f"{_show(new.get('grain', []))}", before.of_entity(name),
                                "update the workflows that read it; retrain"))
    if old.get("history") != new.get("history"):
        # The entity's view now holds one row per key (or every version again): its rows change.
        out.append(SchemaChange(address, "breaking", f"history {_show(old.get('history'))} -> "
                                f"{_show(new.get('history'))}", before.of_entity(name),
                                "the view's rows change: update the workflows that read it; retrain"))
    if old.get("deprecated") != new.get("deprecated"):
        note = f"deprecated: {new['deprecated']}" if new.get("deprecated") else "no longer deprecated"
        out.append(SchemaChange(address, "doc-only", note, before.of_entity(name)))
    if old.get("doc") != new.get("doc"):
        out.append(SchemaChange(address, "doc-only", "doc changed"))
    for kind in _MEMBERS:
        out += _member_changes(name, kind, _by_name(old.get(kind, [])), _by_name(new.get(kind, [])), before, after)
    return out


def _metric_changes(old: dict, new: dict, before: _Usage, after: _Usage) -> list[SchemaChange]:
    out = []
    renamed = pair_renames(old, new, same_metric)
    for name in sorted(set(old) | set(new)):
        address = f"metric.{name}"
        if name in renamed:
            out.append(SchemaChange(address, "breaking", f"metric renamed `{name}` -> `{renamed[name]}`",
                                    before.of_metric(name),
                                    f"update the workflows to use `{renamed[name]}`, or keep the name `{name}`; retrain"))
        elif name in renamed.values():
            continue
        elif name not in new:
            out.append(SchemaChange(address, "breaking", "metric removed", before.of_metric(name),
                                    "restore the metric or move the workflows to another; retrain"))
        elif name not in old:
            out.append(SchemaChange(address, "additive", "metric added", after.of_metric(name),
                                    "distill data for workflows that use it"))
        else:
            if old[name].get("expr") != new[name].get("expr"):
                out.append(SchemaChange(address, "breaking",
                                        f"formula {old[name].get('expr')} -> {new[name].get('expr')}",
                                        before.of_metric(name),
                                        "check the workflows' solutions compute the new formula; retrain"))
            if old[name].get("doc") != new[name].get("doc"):
                out.append(SchemaChange(address, "doc-only", "doc changed"))
    return out


def _schema_level(old: dict, new: dict) -> list[SchemaChange]:
    out = []
    if old.get("name") != new.get("name"):
        out.append(SchemaChange("schema", "breaking", f"name {old.get('name')} -> {new.get('name')}", (),
                                "a different schema is a different model: retrain"))
    if old.get("source") != new.get("source"):
        out.append(SchemaChange("schema", "binding-only", f"spec file {_show(old.get('source'))} -> {_show(new.get('source'))}"))
    if old.get("version") != new.get("version"):
        out.append(SchemaChange("schema", "doc-only", f"version {old.get('version')} -> {new.get('version')}"))
    if old.get("doc") != new.get("doc"):
        out.append(SchemaChange("schema", "doc-only", "doc changed"))
    if old.get("currency") != new.get("currency"):      # what the prompt says money is in
        out.append(SchemaChange("schema", "doc-only", f"currency {_show(old.get('currency'))} -> "
                                                      f"{_show(new.get('currency'))}"))
    return out


def classify_schema(before: dict, after: dict, before_files: Mapping[str, bytes],
                    after_files: Mapping[str, bytes]) -> list[SchemaChange]:
    """Every logical and physical schema change between two ``plan.json`` objects, classified.

    Workflows listed for a removal or a type change are those of the old plan that read
    the part (solution SQL, params, metrics); for an addition, those of the new plan.
    """
    old, new = before["recipe"]["schema"], after["recipe"]["schema"]
    used_before, used_after = _Usage(before, before_files), _Usage(after, after_files)
    out = _schema_level(old, new)
    old_entities, new_entities = _by_name(old.get("entities", [])), _by_name(new.get("entities", []))
    renamed = pair_renames(old_entities, new_entities, same_entity)
    for name in sorted(set(old_entities) | set(new_entities)):
        if name in renamed:
            twin = renamed[name]
            out.append(SchemaChange(f"entity.{name}", "breaking", f"entity renamed `{name}` -> `{twin}`",
                                    used_before.of_entity(name),
                                    f"update the workflows to read `{twin}`, or keep `{name}` as the logical name "
                                    f"bound to the new table; retrain"))
            # The view follows the entity's name: only what changed besides the name is listed.
            same_view = {**old_entities[name], "view": new_entities[twin]["view"]}
            out += _entity_changes(twin, same_view, new_entities[twin], used_before, used_after)
        elif name in renamed.values():
            continue
        elif name not in new_entities:
            out.append(SchemaChange(f"entity.{name}", "breaking", "entity removed", used_before.of_entity(name),
                                    f"restore `{name}`, map it to the entity that replaced it, or update the "
                                    f"workflows that read it; retrain"))
        elif name not in old_entities:
            out.append(SchemaChange(f"entity.{name}", "additive", "entity added", used_after.of_entity(name),
                                    "add workflows that use it and distill their data"))
        else:
            out += _entity_changes(name, old_entities[name], new_entities[name], used_before, used_after)
    out += _metric_changes(_by_name(old.get("metrics", [])), _by_name(new.get("metrics", [])),
                           used_before, used_after)
    return out


def schema_verdict(changes: list[SchemaChange] | tuple[SchemaChange, ...]) -> str:
    """The dearest category among ``changes`` ("" when the schema did not change)."""
    return max((c.category for c in changes), key=CATEGORIES.index, default="")
