"""Turn source tables into entities: names, types, keys, refs and docs.

What the source declares (a primary key, a foreign key, a comment, dbt tests) is
taken as is. What is *guessed* is written with a ``# guessed:`` comment giving its
evidence, so a reviewer sees exactly what to check. Keys are chosen in
:mod:`craftc.importer.keys`, refs in :mod:`craftc.importer.refs`; this module names
things (every name valid, never a keyword, unique in its scope) and types fields.

Enum rule: a text column is guessed an enum only when the data has at least
``ENUM_MIN_ROWS`` non-null values, 2 to ``ENUM_MAX_VALUES`` distinct values, each
repeating ``ENUM_MIN_REPEAT`` times on average, and every value is a valid name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from craftc.importer.conventions import HISTORY_SUFFIX, entity_words, id_base, is_id_like, type_kind
from craftc.importer.keys import choose_key
from craftc.importer.model import SourceColumn, SourceTable
from craftc.importer.names import NameAllocator, camel_words, identifier, is_name
from craftc.importer.refs import TableIndex, break_cycles, find_ref
from craftc.lower import snake_case       # the view name the compiler gives an entity


__all__ = ["InferredField", "InferredRef", "InferredEntity", "infer_entities", "entity_name", "type_kind",
           "ENUM_MIN_ROWS", "ENUM_MAX_VALUES", "ENUM_MIN_REPEAT"]

MONEY_WORDS = re.compile(r"(cost|spend|amount|amt|price|budget|revenue|fee|total|paid)")
MONEY_SUFFIXES = (("_micros", 1e-6), ("_cents", 0.01))
# Docs that say a number is money in a minor unit: (pattern, scale, what the guess says).
MONEY_DOCS = (
    (re.compile(r"\b(in|as) micros\b|\bmicro[- ]?(units|dollars|currency)\b|\bmillionths\b", re.I), 1e-6, "micros"),
    (re.compile(r"\b(in|as) cents\b|\bsmallest (currency|money) unit\b|\bminor (currency )?units?\b", re.I),
     0.01, "cents"),
)
# A doc that lists a column's values: "One of ACTIVE, PAUSED or DELETED", "Possible values: `A`, `B`".
VALUE_LIST_DOC = re.compile(r"\b(?:one of|possible values(?: are)?|allowed values(?: are)?|valid values(?: are)?|"
                            r"values?:|either)\s*:?\s*(.+)", re.I)
ENUM_MIN_ROWS = 20
ENUM_MAX_VALUES = 12
ENUM_MIN_REPEAT = 2
# Values seen once, as a share of the rows, estimate the share of rows whose value the
# sample has not seen at all (Good-Turing); above this, the list is not closed.
ENUM_UNSEEN_SHARE = 0.05


@dataclass
class InferredField:
    name: str
    kind: str                    # a language type kind: int, float, money, string, ...
    column: str
    doc: str = ""
    values: tuple[str, ...] = ()
    scale: float | None = None
    nullable: bool = False
    guesses: list[str] = field(default_factory=list)
    preferred: str = ""          # the name wanted before clashes are resolved


@dataclass
class InferredRef:
    name: str
    target: str
    column: str
    doc: str = ""
    nullable: bool = False
    comments: list[str] = field(default_factory=list)


@dataclass
class InferredEntity:
    name: str
    table: str
    doc: str
    key: InferredField | None    # None: a fact table with a grain
    key_guess: str = ""
    fields: list[InferredField] = field(default_factory=list)
    refs: list[InferredRef] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # entity-level `# guessed:` lines
    grain: list[str] = field(default_factory=list)   # member names (fields, refs) of `grain`
    history_version: str = ""    # the field of `history by`, for a history table


def entity_name(table: str) -> str:
    """`adw.cmp_dim` -> `Cmp`, `sales.order_items` -> `OrderItem`."""
    name = "".join(w.capitalize() for w in entity_words(table)) or "Table"
    return name if name[0].isalpha() else f"T{name}"


def _unprefixed(table: str, prefixes: tuple[str, ...]) -> str:
    """`pinwheel.pw_campaign_history` -> `campaign_history` when `pw_` prefixes the warehouse's tables."""
    last = table.split(".")[-1]
    words = "_".join(camel_words(last))
    for p in prefixes:
        if words.startswith(p) and len(words) > len(p):
            return words[len(p):]
    return table


def _views_of(entity: str, history: bool) -> list[str]:
    """The views an entity's name gives: its own, and `<view>_history` for a history table."""
    return [snake_case(entity)] + ([f"{snake_case(entity)}_history"] if history else [])


def _name_entities(tables: list[SourceTable], prefixes: tuple[str, ...] = (),
                   histories: frozenset[str] = frozenset()) -> dict[str, str]:
    """Entity names, unique, whose views (snake_case) clash neither with each other nor a table.

    A history table's entity is named after what it versions (`pw_campaign_history` ->
    `Campaign`): its view holds the current campaigns, and `campaign_history` every version.
    """
    views = NameAllocator({t.name for t in tables})
    names: dict[str, str] = {}
    for st in sorted(tables, key=lambda t: t.name):
        unprefixed = _unprefixed(st.name, prefixes)
        if st.name in histories:
            last = "_".join(camel_words(unprefixed.split(".")[-1]))
            unprefixed = HISTORY_SUFFIX.sub("", last) or unprefixed
        base = entity_name(unprefixed)
        candidates = [base, base + "Entity"] + [f"{base}{n}" for n in range(2, len(tables) + 3)]
        history = st.name in histories
        names[st.name] = next(c for c in candidates if views.free(*_views_of(c, history)))
        for view in _views_of(names[st.name], history):
            views.take([view])
    return names


def _guess_type(col: SourceColumn) -> tuple[str, str]:
    """(kind, guess) for a column whose source names no type."""
    low = "_".join(identifier(col.name).split("_"))
    if re.search(r"(_at|_timestamp|_synced|_time)$", low):
        return "timestamp", "timestamp from the name (the source gives no type)"
    if low == "date" or low.endswith("_date") or low.startswith("date_"):
        return "date", "date from the name (the source gives no type)"
    if re.match(r"^(is|has)_", low):
        return "bool", "bool from the name (the source gives no type)"
    return "string", ""


def _enum_values(col: SourceColumn, siblings: list[tuple[str, SourceColumn]] = ()) -> tuple[tuple[str, ...], str]:
    """(values, why) of an enum the evidence closes, or ((), why not).

    A sample closes an enum only when it is large enough (ENUM_MIN_ROWS), has few values
    (2 to ENUM_MAX_VALUES) and saw every one of them at least twice: a value seen once
    says the sample may well miss others. A column of the same name in another table
    (``siblings``) whose values hold every value seen here is the same domain: its values
    join the list.
    """
    if not col.values or not all(is_name(v) for v in col.values) or len(set(col.values)) != len(col.values):
        return (), ""
    if col.values_declared:
        return col.values, ""
    rows = col.non_null or 0
    enough = rows >= ENUM_MIN_ROWS and 2 <= len(col.values) <= ENUM_MAX_VALUES
    if not (enough and len(col.values) * ENUM_MIN_REPEAT <= rows):
        return (), ""
    once = sorted(v for v, n in (col.value_counts or {}).items() if n < ENUM_MIN_REPEAT)
    if len(once) > rows * ENUM_UNSEEN_SHARE:
        return (), (f"string, not an enum: {', '.join(f'`{v}`' for v in once[:3])} occur once in {rows} "
                    "rows, so the sample likely misses values; write `enum(...)` if the list is closed")
    values, extra = set(col.values), []
    for where, other in siblings:
        found = set(other.values_declared and other.values or other.value_set or other.values or ())
        # Only a column whose values hold every value seen here is the same domain, a fuller
        # sample of it; sharing one value (`failed` in a payout's and a charge's status) is not.
        if set(col.values) < found:
            extra.append(f"`{where}` adds {', '.join(sorted(found - values))}")
            values |= found
    if extra and (len(values) > ENUM_MAX_VALUES or not all(is_name(v) for v in values)):
        return (), f"string, not an enum: {'; '.join(extra)} (too many values, or not names)"
    why = f"enum: {len(col.values)} distinct values in {rows} rows" + (
        f", {len(once)} seen once" if once else f", each seen at least {ENUM_MIN_REPEAT} times")
    if extra:
        why += "; the same column elsewhere: " + "; ".join(extra)
    return tuple(sorted(values)), why


def _documented_values(doc: str) -> tuple[str, ...]:
    """Values a column doc lists, when it lists 2 to ENUM_MAX_VALUES names: `One of A, B or C`."""
    found = VALUE_LIST_DOC.search(doc or "")
    if not found:
        return ()
    text = found.group(1).split(".")[0] if "`" not in found.group(1) else found.group(1)
    quoted = re.findall(r"`([^`]+)`|'([^']+)'|\"([^\"]+)\"", text)
    values = [next(v for v in q if v) for q in quoted] if quoted else [
        v.strip() for v in re.split(r",|\bor\b|\band\b|/", text) if v.strip()]
    values = list(dict.fromkeys(values))
    if not 2 <= len(values) <= ENUM_MAX_VALUES or not all(is_name(v) for v in values):
        return ()
    return tuple(values)


def _field(col: SourceColumn, siblings: list[tuple[str, SourceColumn]] = ()) -> InferredField:
    kind, guess = (type_kind(col.type), "") if col.type_known else _guess_type(col)
    out = InferredField(name="", kind=kind, column=col.name, doc=col.comment, nullable=col.nullable,
                        preferred=identifier(col.name))
    lowered = col.name.lower()
    if kind in ("int", "float") or not col.type_known:
        for pattern, scale, unit in MONEY_DOCS:
            said = pattern.search(col.comment or "")
            if said:
                out.kind, out.scale = "money", scale
                for suffix, _ in MONEY_SUFFIXES:
                    if lowered.endswith(suffix):
                        out.preferred = identifier(col.name[: -len(suffix)])
                out.guesses.append(f"money in units of {scale:g}: the doc says \"{said.group(0)}\" ({unit})")
                return out
    for suffix, scale in MONEY_SUFFIXES:
        if lowered.endswith(suffix) and (kind in ("int", "float") or not col.type_known):
            out.preferred = identifier(col.name[: -len(suffix)])
            out.kind, out.scale = "money", scale
            out.guesses.append(f"money in units of {scale:g} from the `{suffix}` suffix")
            return out
    if guess:
        out.guesses.append(guess)
    if kind == "float" and MONEY_WORDS.search(lowered) and "rate" not in lowered:
        out.kind = "money"
        out.guesses.append("money from the column name")
    documented = _documented_values(col.comment) if kind == "string" and not col.values_declared else ()
    if documented:
        seen = set(col.value_set or col.values or ())
        if seen <= set(documented):
            out.kind, out.values = "enum", documented
            out.guesses.append(f"enum: the doc lists {len(documented)} values"
                               + (f" and the data holds only those" if seen else ""))
            return out
        out.guesses.append(f"string: the doc lists values, but the data also holds "
                           f"{', '.join(sorted(seen - set(documented))[:3])}")
        return out
    if kind == "string" and col.values:
        values, why = _enum_values(col, siblings)
        if values:
            out.kind, out.values = "enum", values
            if not col.values_declared:
                out.guesses.append(why)
        elif col.values_declared:
            out.guesses.append("string: the accepted values are not all names the language can spell")
        elif why:
            out.guesses.append(why)
    return out


def _columns_naming_others(st: SourceTable, index: TableIndex) -> set[str]:
    return {c.name for c in st.columns if index.named_by(c.name, st.name, same_key=False)}


def infer_entities(tables: list[SourceTable]) -> list[InferredEntity]:
    """Entities with keys, fields and refs; deterministic for the same tables."""
    index = TableIndex(tables)
    keys = {st.name: choose_key(st, _columns_naming_others(st, index)) for st in tables}
    names = _name_entities(tables, index.prefixes, frozenset(t for t, k in keys.items() if k.version))
    index.keys = {t: k.column for t, k in keys.items()}
    index.unique_keys = {t for t, k in keys.items() if not (k.history or k.repeats)}
    index.untargetable = {t for t, k in keys.items() if k.repeats}
    by_column: dict[str, list[tuple[str, SourceColumn]]] = {}
    for st in tables:
        for c in st.columns:
            if type_kind(c.type) == "string" and (c.values or c.value_set):
                by_column.setdefault(c.name.lower(), []).append((f"{st.name}.{c.name}", c))
    entities = [_entity(st, keys[st.name], index, names, by_column) for st in tables]
    break_cycles(entities)
    return sorted(entities, key=lambda e: e.name)


def _entity(st: SourceTable, choice, index: TableIndex, names: dict[str, str],
            by_column: dict[str, list[tuple[str, SourceColumn]]] | None = None) -> InferredEntity:
    key_col = None if choice.grain else choice.column     # a fact table: its grain, no key
    members = NameAllocator()
    key = None
    if key_col is not None:
        own_id = any(identifier(c.name) == "id" for c in st.columns if c is not key_col)
        key_name = members.take([identifier(key_col.name)] if own_id else ["id", identifier(key_col.name)])
        # Text ids (`cus_0001`, UUIDs) make a `string` key: the prompt's DDL types them as the warehouse does.
        key_kind = "string" if key_col.type_known and type_kind(key_col.type) in ("string", "id") else "int"
        key = InferredField(name=key_name, kind=key_kind, column=key_col.name)
    entity = InferredEntity(name=names[st.name], table=st.name, doc=st.comment, key=key, key_guess=choice.guess)
    if not all(c.type_known for c in st.columns):
        entity.notes.append("types from column names: the source gives none (import a warehouse with "
                            "--docs-from for real types)")
    refs: list[tuple[SourceColumn, object]] = []
    fields: list[InferredField] = []
    for col in st.columns:
        found = find_ref(st, col, index, names, is_key=col is key_col)
        if found is not None and found.target:
            refs.append((col, found))
        if col is not key_col and (found is None or not found.target):
            f = _field(col, [(w, c) for w, c in (by_column or {}).get(col.name.lower(), []) if c is not col])
            if found is not None:
                f.guesses.append(found.rejected)
            fields.append(f)
    # Names: the key first, then fields spelt as their columns, then refs, then renamed fields.
    for f in fields:
        if f.preferred == identifier(f.column):
            f.name = members.take([f.preferred])
    for col, found in refs:
        entity.refs.append(_ref(col, found, names, members))
    for f in fields:
        if not f.name:
            f.name = members.take([f.preferred, identifier(f.column)])
    entity.fields = fields
    _document_parallel_refs(entity)
    _grain_and_history(entity, choice)
    return entity


def _grain_and_history(entity: InferredEntity, choice) -> None:
    """The members of a measured grain (never null: measured so) and the field of `history by`."""
    by_column = {r.column: r for r in entity.refs} | {f.column: f for f in entity.fields}
    for column in choice.grain:
        member = by_column[column]
        member.nullable = False
        entity.grain.append(member.name)
    if choice.version:
        entity.history_version = next(f.name for f in entity.fields if f.column == choice.version)


def _ref(col: SourceColumn, found, names: dict[str, str], members: NameAllocator) -> InferredRef:
    target = names[found.target]
    base = id_base(col.name) if is_id_like(col.name) else col.name
    preferred = [identifier(base)] if base else []
    preferred += [snake_case(target), identifier(base or target) + "_ref"]
    name = members.take(preferred, also="_id")
    return InferredRef(name=name, target=target, column=col.name, doc=col.comment, nullable=col.nullable,
                       comments=[found.guess] if found.guess else [])


def _document_parallel_refs(entity: InferredEntity) -> None:
    """Two refs to one entity need docs (W111): say which column each one follows."""
    by_target: dict[str, list[InferredRef]] = {}
    for r in entity.refs:
        by_target.setdefault(r.target, []).append(r)
    for refs in by_target.values():
        if len(refs) > 1:
            for r in refs:
                r.doc = r.doc or f"The {r.target} in column {r.column}"
