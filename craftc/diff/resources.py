"""Flatten ``plan.json`` into addressed resources of dotted attributes.

A resource is what a reviewer thinks in: ``entity.Campaign``, ``workflow.top_ctr``,
``stage.sft``, ``reward``. Its attributes are the leaves of its JSON, addressed by
dotted keys; lists of named objects (fields, refs, params) are keyed by name, other
lists of objects (turns, expectations) by 1-based position, and lists of plain values
stay one attribute.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RESOURCE_KINDS", "plan_resources", "flatten"]

# Display order of resource kinds; within a kind, resources sort by name.
RESOURCE_KINDS = ("recipe", "schema", "entity", "metric", "workflow", "tool", "format", "teacher",
                  "judge", "gates", "reward", "model", "stage", "eval")
_NAMED_LISTS = {
    "entity": ("schema", "entities"), "metric": ("schema", "metrics"), "workflow": ("workflows",),
    "tool": ("tools",), "judge": ("judges",), "model": ("models",), "stage": ("stages",),
}
_SINGLE = ("format", "teacher", "gates", "reward", "eval")
# `stripped_prompt` only where set (plan.json omits it at its default).
_RECIPE_KEYS = ("name", "profile", "profiles", "seed", "scale", "stripped_prompt", "earlier_turns")


def _is_object_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _item_key(item: dict, position: int) -> str:
    return str(item["name"]) if "name" in item else str(position)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted-key leaves of a JSON value.

    Example:
        >>> flatten({"key": {"name": "id"}, "fields": [{"name": "n", "doc": ""}], "tags": ["a"]})
        {'fields.n.doc': '', 'key.name': 'id', 'tags': ['a']}
    """
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}{key}."))
        return out
    if _is_object_list(value):
        out = {}
        for position, item in enumerate(value, start=1):
            # A named item's name is already its key.
            out.update(flatten(_without_name(item), f"{prefix}{_item_key(item, position)}."))
        return out
    return {prefix.rstrip("."): value}


def _without_name(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "name"}


def plan_resources(plan: dict) -> dict[str, dict[str, Any]]:
    """Address -> flattened attributes for every resource of a ``plan.json`` object."""
    recipe = plan["recipe"]
    resources: dict[str, dict[str, Any]] = {}
    top = {key: recipe[key] for key in _RECIPE_KEYS if key in recipe}
    top["craftc_version"] = plan.get("craftc_version")
    resources["recipe"] = flatten(top)
    schema = recipe["schema"]
    resources["schema"] = flatten({k: v for k, v in schema.items() if k not in ("entities", "metrics")})
    for kind in RESOURCE_KINDS:
        if kind in _NAMED_LISTS:
            container: Any = recipe
            for step in _NAMED_LISTS[kind]:
                container = container.get(step, [])
            for item in sorted(container, key=lambda i: str(i["name"])):
                resources[f"{kind}.{item['name']}"] = flatten(_without_name(item))
        elif kind in _SINGLE and kind in recipe:
            resources[kind] = flatten(recipe[kind])
    return resources
