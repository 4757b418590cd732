"""Per-object changes in the recipe's own terms: one ``.craft`` line per field, ref or setting.

The diff's resources hold flattened attributes (``fields.ad_strength.type.kind``);
here they are grouped back into what a recipe author wrote, so an added field reads
as its declaration, in the layout ``craftc fmt`` gives it::

    + field ad_strength enum(poor, average, good, excellent) -> column "ad_strngth_cd" nullable

A rename is one line (``~ field final_url => landing_page_url``), a removed entity is
its header and a count, and null or empty attributes of an added or removed object
are not spelled out. Docs are summarised as ``doc changed``; ``--full`` lists every
attribute as the plan holds it.
"""

from __future__ import annotations

import json
from typing import Any

from craftc.diff.model import AttributeChange, PlanDiff, Rename, ResourceChange

__all__ = ["object_blocks", "subject"]

_MEMBER_KINDS = {"fields": "field", "refs": "ref", "params": "param", "turns": "turn"}
_EMPTY = (None, "", [], {}, False)


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def subject(address: str) -> str:
    """``entity.Ad.fields.final_url`` -> ``field Ad.final_url``; ``metric.ctr`` -> ``metric ctr``."""
    parts = address.split(".")
    if len(parts) == 4 and parts[2] in _MEMBER_KINDS:
        return f"{_MEMBER_KINDS[parts[2]]} {parts[1]}.{parts[3]}"
    if len(parts) == 3 and parts[2] == "key":
        return f"key of {parts[1]}"
    return " ".join(parts[:2]) if len(parts) > 1 else address


def _unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def _binding(member: dict, name: str) -> str:
    column, scale = member.get("column"), member.get("scale")
    if column in (None, name) and scale is None:
        return ""
    return f' -> column {_value(column)}' + (f" scale {_value(scale)}" if scale is not None else "")


def _type(t: dict) -> str:
    values = t.get("values") or []
    return f"{t.get('kind')}({', '.join(values)})" if values else str(t.get("kind"))


def member_line(kind: str, name: str, member: dict) -> str:
    """A field, ref or key as the spec declares it (docs left out).

    Example:
        >>> member_line("field", "price", {"type": {"kind": "money"}, "column": "price_cents", "scale": 0.01})
        'field price money -> column "price_cents" scale 0.01'
    """
    if kind == "field":
        line = f"field {name} {_type(member.get('type', {}))}{_binding(member, name)}"
    elif kind == "ref":
        line = f"ref {name} -> {member.get('target')}{_binding(member, name + '_id')}"
    elif kind == "key":
        return f"key {member.get('name')}{_binding(member, member.get('name'))}"
    else:
        shown = ", ".join(f"{k} {_value(v)}" for k, v in sorted(_flat(member).items()) if v not in _EMPTY)
        return f"{kind} {name}" + (f" {{ {shown} }}" if shown else "")
    if member.get("nullable"):
        line += " nullable"
    if member.get("deprecated"):
        line += f" deprecated {_value(member['deprecated'])}"
    return line


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): node}


def _change_text(key: str, old: Any, new: Any) -> str:
    if key == "type.kind":
        return f"type {old} -> {new}"
    if key.rsplit(".", 1)[-1] == "doc":
        return f"{key} changed" if old and new else f"{key} {'added' if new else 'removed'}"
    return f"{key} {_value(old)} -> {_value(new)}"


def _group(key: str) -> tuple[str, str, str]:
    """(member kind, member name, attribute key within it) of a flattened attribute key."""
    parts = key.split(".")
    if parts[0] in _MEMBER_KINDS and len(parts) > 2:
        return _MEMBER_KINDS[parts[0]], parts[1], ".".join(parts[2:])
    if parts[0] == "key" and len(parts) == 2:
        return "key", "", parts[1]
    return "", key, ""


def _member_lines(attrs: tuple[AttributeChange, ...], renames: dict[str, str], symbols: dict[str, str]) -> list[str]:
    groups: dict[tuple[str, str], list[AttributeChange]] = {}
    for attr in attrs:
        kind, name, _ = _group(attr.key)
        groups.setdefault((kind, name), []).append(attr)
    lines = []
    plural = {v: k for k, v in _MEMBER_KINDS.items()}
    renamed_to = dict(renames)
    # A renamed member is shown once, from its old name's group.
    done = {(_MEMBER_KINDS[new.split(".", 1)[0]], new.split(".", 1)[1]) for new in renames.values()}
    for (kind, name), changes in groups.items():
        if (kind, name) in done:
            continue
        if not kind:
            [attr] = changes
            if attr.action == "change":
                lines.append(f"{symbols['change']} {_change_text(attr.key, attr.old, attr.new)}")
            elif attr.new not in _EMPTY or attr.old not in _EMPTY:
                value = attr.new if attr.action == "add" else attr.old
                lines.append(f"{symbols[attr.action]} {attr.key} {_value(value)}")
            continue
        actions = {c.action for c in changes}
        sub = {_group(c.key)[2]: c for c in changes}
        twin = renamed_to.get(f"{plural.get(kind, kind)}.{name}")
        if twin and actions == {"remove"}:
            new_name = twin.split(".", 1)[1]
            partner = groups.get((kind, new_name), [])
            old_vals = {_group(c.key)[2]: c.old for c in changes}
            new_vals = {_group(c.key)[2]: c.new for c in partner}
            extra = [_change_text(k, old_vals.get(k), new_vals.get(k)) for k in sorted(old_vals.keys() | new_vals.keys())
                     if old_vals.get(k) != new_vals.get(k)]
            lines.append(f"{symbols['change']} {kind} {name} => {new_name}" + (f": {', '.join(extra)}" if extra else ""))
        elif actions == {"add"} or actions == {"remove"}:
            action = actions.pop()
            member = _unflatten({k: (c.new if action == "add" else c.old) for k, c in sub.items()})
            lines.append(f"{symbols[action]} {member_line(kind, name, member)}")
        else:
            texts = []
            for k, c in sorted(sub.items()):
                if c.action == "change":
                    texts.append(_change_text(k, c.old, c.new))
                elif c.action == "add":
                    texts.append(f"{k} {_value(c.new)}" if c.new not in _EMPTY else f"{k} added")
                else:
                    texts.append(f"no {k}")
            label = f"{kind} {name}".strip() if kind != "key" else "key"
            lines.append(f"{symbols['change']} {label}: {', '.join(texts)}")
    return lines


def _header(address: str) -> str:
    kind, _, name = address.partition(".")
    return f"{kind} {name}".strip()


def _count(resource: ResourceChange) -> str:
    members: dict[str, set[str]] = {}
    for attr in resource.attributes:
        kind, name, _ = _group(attr.key)
        if kind and kind != "key":
            members.setdefault(kind, set()).add(name)
    counted = [f"{len(names)} {kind}{'s' if len(names) != 1 else ''}" for kind, names in sorted(members.items())]
    settings = sum(1 for a in resource.attributes if not _group(a.key)[0] and (a.old if a.action == "remove" else a.new) not in _EMPTY)
    if not counted:
        counted = [f"{settings} setting{'s' if settings != 1 else ''}"]
    return ", ".join(counted)


_MEMBER_STYLE = ("entity", "workflow")    # nested blocks, one member a line; other kinds are settings


def _hidden(resource: ResourceChange) -> str:
    return f"  # ({resource.unchanged} unchanged attributes hidden)" if resource.unchanged else ""


def _setting_items(resource: ResourceChange) -> list[str]:
    items = []
    for attr in resource.attributes:
        if attr.action == "change":
            items.append(_change_text(attr.key, attr.old, attr.new))
        elif (attr.new if attr.action == "add" else attr.old) not in _EMPTY:
            value = attr.new if attr.action == "add" else attr.old
            items.append(f"{attr.key} {_value(value)}" + (" (removed)" if resource.action == "change" and attr.action == "remove"
                                                         else " (added)" if resource.action == "change" else ""))
    return items


def _inline(head: str, items: list[str], tail: str, width: int = 100) -> list[str]:
    """``head { a  b  c }tail``, wrapped under the opening brace like a settings block in a recipe."""
    indent = " " * (len(head) + 3)
    lines, current = [], f"{head} {{ "
    for item in items:
        if len(current) + len(item) > width and current.strip() not in (f"{head} {{",):
            lines.append(current.rstrip())
            current = indent
        current += item + "  "
    return lines + [current.rstrip() + " }" + tail]


def _metric_line(resource: ResourceChange, symbol: str, head: str) -> list[str]:
    attrs = {a.key: a for a in resource.attributes}
    if resource.action == "add":
        return [f"{symbol} {head} = {attrs['expr'].new}" if "expr" in attrs else f"{symbol} {head}"]
    texts = []
    if "expr" in attrs:                      # entities and sql follow from the formula
        texts.append(f"formula {attrs['expr'].old} -> {attrs['expr'].new}")
    texts += [_change_text(k, a.old, a.new) for k, a in attrs.items()
              if k not in ("expr", "sql", "entities") or "expr" not in attrs]
    return [f"{symbol} {head}: {', '.join(texts)}" + _hidden(resource)]


def _resource_block(resource: ResourceChange, renames: dict[str, str], symbols: dict[str, str],
                    title: str | None = None) -> list[str]:
    head = title or _header(resource.address)
    kind = resource.address.split(".", 1)[0]
    symbol = symbols[resource.action]
    if resource.action == "remove":
        return [f"{symbol} {head} {{ {_count(resource)} }}"]
    if kind == "metric" and (resource.action == "add" or not title):
        return _metric_line(resource, symbol, head)
    if kind not in _MEMBER_STYLE:
        return _inline(f"{symbol} {head}", _setting_items(resource), _hidden(resource))
    attrs = tuple(a for a in resource.attributes if not (resource.action == "add" and a.key == "view"))
    body = _member_lines(attrs, renames, symbols)
    if not body:
        return [f"{symbol} {head}" + _hidden(resource)]
    if len(body) == 1:
        return [f"{symbol} {head} {{ {body[0]} }}" + _hidden(resource)]
    return [f"{symbol} {head} {{"] + [f"    {line}" for line in body] + ["  }" + _hidden(resource)]


def _renamed_resource(old: ResourceChange, new: ResourceChange, renames: dict[str, str],
                      symbols: dict[str, str]) -> list[str]:
    before = {a.key: a.old for a in old.attributes}
    after = {a.key: a.new for a in new.attributes}
    attrs, unchanged = [], 0
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            attrs.append(AttributeChange(key, "remove", old=before[key]))
        elif key not in before:
            attrs.append(AttributeChange(key, "add", new=after[key]))
        elif before[key] != after[key]:
            attrs.append(AttributeChange(key, "change", old=before[key], new=after[key]))
        else:
            unchanged += 1
    merged = ResourceChange(new.address, "change", tuple(attrs), unchanged)
    title = f"{_header(old.address)} => {new.address.split('.', 1)[1]}"
    return _resource_block(merged, renames, symbols, title)


def object_blocks(diff: PlanDiff, symbols: dict[str, str]) -> list[list[str]]:
    """One block of lines per changed object, renamed objects merged into one block."""
    by_address = {r.address: r for r in diff.resources}
    top = {r.old: r.new for r in diff.renames if r.kind in ("entity", "metric", "workflow")
           and r.old in by_address and r.new in by_address}
    merged_new = set(top.values())
    blocks = []
    for resource in diff.resources:
        if resource.address in merged_new:
            continue
        members = _member_renames(diff.renames, resource.address, top)
        if resource.address in top:
            blocks.append(_renamed_resource(resource, by_address[top[resource.address]], members, symbols))
        else:
            blocks.append(_resource_block(resource, members, symbols))
    return blocks


def _member_renames(renames: tuple[Rename, ...], address: str, top: dict[str, str]) -> dict[str, str]:
    """``fields.final_url`` -> ``fields.landing_page_url`` for the members of one entity."""
    owners = {address, top.get(address, address)}
    out = {}
    for r in renames:
        if r.kind in ("field", "ref"):
            owner, member = r.old.rsplit(".", 2)[0], ".".join(r.old.rsplit(".", 2)[1:])
            if owner in owners:
                out[member] = ".".join(r.new.rsplit(".", 2)[1:])
    return out
