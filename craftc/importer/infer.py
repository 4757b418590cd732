"""Turn source tables into a schema spec: names, types, keys, refs and docs.

Everything that is read from the source (a declared primary key, a foreign key, a
comment) is taken as is. Everything that is *guessed* from conventions (a key
because a column is called ``*_id`` and holds unique values, a ref because a column
shares its name with another table's key, an enum from a handful of distinct values,
money in micros) is written with a ``# guessed:`` comment, so a reviewer sees
exactly what to check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from craftc.importer.model import SourceColumn, SourceTable

__all__ = ["InferredField", "InferredEntity", "infer_entities", "entity_name", "type_kind"]

# Words of the language that cannot be a field name without renaming.
RESERVED = {"doc", "table", "key", "ref", "field", "metric", "entity", "schema", "nullable",
            "deprecated", "column", "scale", "version", "recipe", "uses", "in", "from", "or"}
TABLE_AFFIXES = re.compile(r"^(dim_|fct_|fact_|f_|d_|stg_|raw_|tbl_|src_)|(_dim|_fact|_fct|_tbl|_table)$")
MONEY_WORDS = re.compile(r"(cost|spend|amount|amt|price|budget|revenue|fee|total|paid)")
INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT", "INT64", "INT4", "INT8", "INT2", "NUMBER")
FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC", "FLOAT64", "FLOAT4", "FLOAT8")
ENUM_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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


@dataclass
class InferredRef:
    name: str
    target: str
    column: str
    nullable: bool = False
    guess: str = ""


@dataclass
class InferredEntity:
    name: str
    table: str
    doc: str
    key: InferredField
    key_guess: str = ""
    fields: list[InferredField] = field(default_factory=list)
    refs: list[InferredRef] = field(default_factory=list)


def _snake(name: str) -> str:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    name = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
    if not name or name[0].isdigit():
        name = f"f_{name}"
    return name if name not in RESERVED else f"{name}_"


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def entity_name(table: str) -> str:
    """`adw.cmp_dim` -> `Cmp`, `sales.order_items` -> `OrderItem`."""
    base = table.split(".")[-1].lower()
    stripped = TABLE_AFFIXES.sub("", base) or base
    words = [w for w in re.split(r"[^a-z0-9]+", stripped) if w]
    if words:
        words[-1] = _singular(words[-1])
    name = "".join(w.capitalize() for w in words) or "Table"
    return name if name[0].isalpha() else f"T{name}"


def type_kind(source_type: str) -> str:
    """The language type kind for a source type name."""
    base = source_type.upper().split("(")[0].strip()
    if base in INT_TYPES:
        return "int"
    if base in FLOAT_TYPES:
        return "float"
    if base in ("BOOLEAN", "BOOL", "BIT"):
        return "bool"
    if base == "DATE":
        return "date"
    if base.startswith("TIMESTAMP") or base in ("DATETIME", "TIMESTAMPTZ"):
        return "timestamp"
    if base == "UUID":
        return "id"
    return "string"


def _field(col: SourceColumn) -> InferredField:
    kind = type_kind(col.type)
    out = InferredField(name=_snake(col.name), kind=kind, column=col.name, doc=col.comment,
                        nullable=col.nullable)
    lowered = col.name.lower()
    for suffix, scale in (("_micros", 1e-6), ("_cents", 0.01)):
        if lowered.endswith(suffix) and kind in ("int", "float"):
            out.name = _snake(col.name[: -len(suffix)])
            out.kind, out.scale = "money", scale
            out.guesses.append(f"money in units of {scale:g} from the `{suffix}` suffix")
            return out
    if kind == "float" and MONEY_WORDS.search(lowered) and "rate" not in lowered:
        out.kind = "money"
        out.guesses.append("money from the column name")
    if kind == "string" and col.values and all(ENUM_VALUE.match(v) for v in col.values):
        out.kind, out.values = "enum", col.values
        if not col.values_declared:
            out.guesses.append(f"enum from {len(col.values)} distinct values in the data")
    return out


def _pick_key(st: SourceTable) -> tuple[SourceColumn, str]:
    by_name = {c.name: c for c in st.columns}
    if len(st.primary_key) == 1 and st.primary_key[0] in by_name:
        return by_name[st.primary_key[0]], ""
    for col in st.columns:
        if col.name in st.unique and col.name.lower().endswith("id"):
            return col, "key from a unique `*id` column"
    for col in st.columns:
        if col.name.lower().endswith("id"):
            return col, "key from the first `*id` column"
    return st.columns[0], "key from the first column (no primary key declared)"


def infer_entities(tables: list[SourceTable]) -> list[InferredEntity]:
    """Entities with keys, fields and refs; deterministic for the same tables."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for st in sorted(tables, key=lambda t: t.name):
        name = entity_name(st.name)
        while name in used:
            name += "X"
        used.add(name)
        names[st.name] = name

    keys = {st.name: _pick_key(st) for st in tables}
    key_columns: dict[str, str] = {}                    # key column name -> table, when unambiguous
    for table, (col, _) in keys.items():
        key_columns[col.name] = table if col.name not in key_columns else ""

    entities = []
    for st in tables:
        key_col, key_guess = keys[st.name]
        key = InferredField(name="id", kind="id", column=key_col.name)
        entity = InferredEntity(name=names[st.name], table=st.name, doc=st.comment, key=key,
                                key_guess=key_guess)
        declared = {col: target for col, target, _ in st.foreign_keys}
        for col in st.columns:
            if col.name == key_col.name:
                continue
            target, guess = declared.get(col.name), ""
            if target is None and key_columns.get(col.name) not in (None, "", st.name):
                target, guess = key_columns[col.name], "ref from the column name matching another table's key"
            if target is not None and target in names:
                ref_name = _snake(re.sub(r"_?id$", "", col.name, flags=re.I) or col.name)
                entity.refs.append(InferredRef(name=ref_name, target=names[target], column=col.name,
                                               nullable=col.nullable, guess=guess))
                continue
            entity.fields.append(_field(col))
        entities.append(entity)
    return sorted(entities, key=lambda e: e.name)
