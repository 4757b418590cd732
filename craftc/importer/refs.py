"""Which columns link to another entity: declared foreign keys, naming, and the data.

A column is a ref candidate when the source declares a foreign key, when its name
names another table (`ad_group_id` -> `ad_group_history`, `campaign_id` -> `campaigns`),
or when it has the same name as another table's key column (`sku`). With data, a
candidate becomes a ref only if every value of the column is a value of the target's
key (containment); a candidate that fails it stays a field, with a comment giving the
count of values not found.

Refs that would close a cycle of non-nullable links (which the language rejects,
E109) are marked nullable, with a comment.
"""

from __future__ import annotations

from dataclasses import dataclass

from craftc.importer.conventions import KEYABLE_KINDS, common_prefixes, id_base, is_id_like, table_aliases, type_kind
from craftc.importer.model import SourceColumn, SourceTable

__all__ = ["RefGuess", "TableIndex", "find_ref", "break_cycles", "REF_MIN_CONTAINMENT"]

# The share of a column's distinct values that must be keys of the target for a guessed
# ref: a few orphans (a deleted campaign still in last month's stats) keep the ref, and
# the comment gives the ratio; fewer are no evidence of a link.
REF_MIN_CONTAINMENT = 0.9


@dataclass
class RefGuess:
    target: str              # the target table
    guess: str = ""          # empty: declared by the source
    rejected: str = ""       # a candidate the data refuted, for the field's comment


class TableIndex:
    """Tables by the names id columns use for them, and their key columns."""

    def __init__(self, tables: list[SourceTable]):
        self.tables = {t.name: t for t in tables}
        self.prefixes = common_prefixes([t.name for t in tables])
        self.by_alias: dict[str, list[tuple[int, str]]] = {}
        for t in sorted(tables, key=lambda t: t.name):
            for strength, alias in enumerate(table_aliases(t.name, self.prefixes)):
                self.by_alias.setdefault(alias, []).append((strength, t.name))
        self.keys: dict[str, SourceColumn] = {}
        self.unique_keys: set[str] = set()     # tables whose key holds one row per value
        self.untargetable: set[str] = set()    # tables whose key repeats for no known reason

    def resolve(self, name: str) -> str | None:
        """A table named by a declaration: exactly, or by its last part when that is unique."""
        if name in self.tables:
            return name
        lowered = {t.lower(): t for t in self.tables}
        if name.lower() in lowered:
            return lowered[name.lower()]
        base = name.split(".")[-1].lower()
        hits = [t for t in self.tables if t.split(".")[-1].lower() == base]
        return hits[0] if len(hits) == 1 else None

    def named_by(self, column: str, owner: str, same_key: bool = True) -> list[str]:
        """Other tables a column's name points at, strongest first.

        ``same_key``: also a table whose key column has this very name (`sku`), when only
        one has; not for a table's own key column, which would then point both ways.
        """
        base = id_base(column)
        hits = sorted(self.by_alias.get(base, [])) if base and is_id_like(column) else []
        out = [t for _, t in hits if t != owner and t not in self.untargetable]
        if not same_key or not base:
            return out
        same_key = sorted(t for t, k in self.keys.items()
                          if k.name == column and t != owner and t in self.unique_keys)
        return out + [t for t in same_key if t not in out and len(same_key) == 1]


def _containment(col: SourceColumn, key: SourceColumn) -> tuple[float | None, int]:
    """(share of the column's distinct values that are keys, values missing) when both
    sides were measured and the column holds values; (None, 0) otherwise."""
    if col.value_set is None or key.value_set is None or not col.value_set:
        return None, 0
    missing = len(col.value_set - key.value_set)
    return 1 - missing / len(col.value_set), missing


def find_ref(st: SourceTable, col: SourceColumn, index: TableIndex, names: dict[str, str],
             is_key: bool = False) -> RefGuess | None:
    """The ref a column is, or None (a plain field; ``rejected`` explains a refuted guess).

    Candidates are the tables the column's name names (then the table whose key has its
    name); with data, each is scored by the share of the column's distinct values that
    are its keys, and the best one at or above REF_MIN_CONTAINMENT wins (ties: the
    strongest name). A column of a type that holds no ids, or null in every row, is
    never a guessed ref.
    """
    declared = {c: target for c, target, _ in st.foreign_keys}
    if col.name in declared:
        target = index.resolve(declared[col.name])
        return _declared(st, col, target, index, names) if target else None
    candidates = index.named_by(col.name, st.name, same_key=not is_key)
    if not candidates:
        return None
    if col.type_known and type_kind(col.type) not in KEYABLE_KINDS:
        return RefGuess("", rejected=f"not a ref: `{col.name}` names {names[candidates[0]]} but is "
                                     f"{col.type}, not a type that holds ids")
    if col.value_set is not None and not col.value_set and st.rows:
        return RefGuess("", rejected=f"not a ref: `{col.name}` names {names[candidates[0]]} but is null "
                                     f"in all {st.rows} rows")
    by_alias = index.named_by(col.name, st.name, same_key=False)
    scored, rejected = [], ""
    for strength, target in enumerate(candidates):
        key = index.keys[target]
        share, missing = _containment(col, key)
        what = (f"`{col.name}` names {names[target]} (key `{key.name}`)" if target in by_alias
                else f"`{col.name}` has the name of {names[target]}'s key")
        if share is None:
            why = ("no data to check" if st.rows is None else "the table is empty" if not st.rows
                   else "values not measured")
            return RefGuess(target, f"ref: {what}; {why}")
        if share < REF_MIN_CONTAINMENT:
            rejected = rejected or (f"not a ref: {what} but {missing} of its {len(col.value_set)} "
                                    f"values are not {names[target]} keys ({share:.0%} contained)")
            continue
        scored.append((-share, strength, target, what, missing))
    if not scored:
        return RefGuess("", rejected=rejected) if rejected else None
    share, _, target, what, missing = min(scored)
    n = len(col.value_set)
    if missing:
        return RefGuess(target, f"ref: {what}, and {n - missing} of its {n} distinct values "
                                f"({-share:.0%}) are {names[target]} keys; {missing} are not")
    others = f" (of {len(scored)} candidates)" if len(scored) > 1 else ""
    return RefGuess(target, f"ref: {what}, and all {n} distinct values are {names[target]} keys{others}")


def _declared(st: SourceTable, col: SourceColumn, target: str, index: TableIndex,
              names: dict[str, str]) -> RefGuess:
    """A ref the source declares (a foreign key, a dbt `relationships` test), with the share
    of its values the data bears out: kept whatever the share (the declaration is the
    owner's word, and a few orphans are normal), never on a column null in every row."""
    if col.value_set is not None and not col.value_set and st.rows:
        return RefGuess("", rejected=f"not a ref: `{col.name}` is declared to reference {names[target]} "
                                     f"but is null in all {st.rows} rows")
    key = index.keys.get(target)
    share, missing = _containment(col, key) if key is not None else (None, 0)
    if share is None:
        return RefGuess(target)
    n = len(col.value_set)
    if not missing:
        return RefGuess(target, f"ref: declared by the source, and all {n} distinct values are {names[target]} keys")
    low = (f"; below the {REF_MIN_CONTAINMENT:.0%} a guessed ref needs: check the declaration or the data"
           if share < REF_MIN_CONTAINMENT else "")
    return RefGuess(target, f"ref: declared by the source, and {n - missing} of its {n} distinct values ({share:.0%}) "
                            f"are {names[target]} keys; {missing} are not{low}")


def break_cycles(entities) -> None:
    """Mark refs nullable, in a fixed order, where a non-nullable one would close a cycle."""
    hard: dict[str, set[str]] = {}

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(hard.get(node, ()))
        return False

    for e in sorted(entities, key=lambda e: e.name):
        for r in e.refs:
            if r.nullable:
                continue
            if reaches(r.target, e.name):
                r.nullable = True
                r.comments.append(f"nullable: a required `{r.name}` would close a cycle of refs back "
                                  f"to {e.name}")
            else:
                hard.setdefault(e.name, set()).add(r.target)
