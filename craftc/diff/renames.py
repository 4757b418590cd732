"""Recognise a removal and an addition as one object under a new name.

A rename keeps what the name stood for and changes only the name, so each kind is
paired on what it stands for:

- a field or ref: the same physical column and the same type (or target);
- an entity: the same physical table, or the same field names;
- a metric: the same formula;
- a workflow: the same questions (every turn's phrasings).

Example:
    >>> old = {"final_url": {"column": "fnl_url", "type": {"kind": "string"}}}
    >>> new = {"landing_page_url": {"column": "fnl_url", "type": {"kind": "string"}}}
    >>> pair_renames(old, new, same_member)
    {'final_url': 'landing_page_url'}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from craftc.diff.model import Rename

__all__ = ["pair_renames", "plan_renames", "same_member", "same_entity", "same_metric", "same_workflow"]


def same_member(old: dict, new: dict) -> bool:
    """A field or ref on the same column with the same type (fields) or target (refs)."""
    return new.get("column") == old.get("column") and \
        new.get("type", new.get("target")) == old.get("type", old.get("target"))


def same_entity(old: dict, new: dict) -> bool:
    names = (lambda e: sorted(f["name"] for f in e.get("fields", [])))
    return old.get("table") == new.get("table") or (bool(names(old)) and names(old) == names(new))


def same_metric(old: dict, new: dict) -> bool:
    return old.get("expr") == new.get("expr")


def same_workflow(old: dict, new: dict) -> bool:
    asks = (lambda w: [turn.get("asks") for turn in w.get("turns", [])])
    return bool(asks(old)) and asks(old) == asks(new)


def pair_renames(old: Mapping[str, dict], new: Mapping[str, dict],
                 same: Callable[[dict, dict], bool]) -> dict[str, str]:
    """Old name -> new name for each name only ``old`` has whose object ``same`` pairs with one only ``new`` has."""
    added = [name for name in new if name not in old]
    pairs = {}
    for name in (n for n in old if n not in new):
        twin = next((a for a in added if same(old[name], new[a])), None)
        if twin is not None:
            pairs[name] = twin
            added.remove(twin)
    return pairs


def _by_name(items) -> dict[str, dict]:
    return {item["name"]: item for item in items}


def plan_renames(before: dict, after: dict) -> list[Rename]:
    """Every rename between two ``plan.json`` objects: entities, their fields and refs, metrics, workflows."""
    old_schema, new_schema = before["recipe"]["schema"], after["recipe"]["schema"]
    old_entities = _by_name(old_schema.get("entities", []))
    new_entities = _by_name(new_schema.get("entities", []))
    entity_pairs = pair_renames(old_entities, new_entities, same_entity)
    out = [Rename("entity", f"entity.{o}", f"entity.{n}") for o, n in entity_pairs.items()]
    pairs = {name: name for name in old_entities if name in new_entities} | entity_pairs
    for old_name, new_name in sorted(pairs.items()):
        for kind in ("fields", "refs"):
            members = pair_renames(_by_name(old_entities[old_name].get(kind, [])),
                                   _by_name(new_entities[new_name].get(kind, [])), same_member)
            out += [Rename(kind[:-1], f"entity.{old_name}.{kind}.{o}", f"entity.{new_name}.{kind}.{n}")
                    for o, n in members.items()]
    metrics = pair_renames(_by_name(old_schema.get("metrics", [])), _by_name(new_schema.get("metrics", [])),
                           same_metric)
    out += [Rename("metric", f"metric.{o}", f"metric.{n}") for o, n in metrics.items()]
    workflows = pair_renames(_by_name(before["recipe"].get("workflows", [])),
                             _by_name(after["recipe"].get("workflows", [])), same_workflow)
    out += [Rename("workflow", f"workflow.{o}", f"workflow.{n}") for o, n in workflows.items()]
    return out
