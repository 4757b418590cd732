"""Which column keys an entity, and how sure the importer is.

Rules, in order (docs/cli.md has the same list):

1. A declared single-column primary key, or a column declared both unique and not
   null (SQL constraints, dbt `unique` + `not_null` tests), is taken as is.
2. With data, the candidates are the columns whose values are unique and never null
   in every row (only the id-like ones, when the table has id-like columns: a
   measure such as `impressions` can be unique by chance); among them the importer prefers a column called `id`, then one named
   after the table (`order_line_id`, `line_id` in `order_lines`), then the first
   id-like column that does not name another table, then the first candidate.
3. With data but no unique column, the table is a **history table** when an id-like
   column repeats and a version column (`valid_from`, `valid_to`, `updated_at`,
   `_fivetran_synced`, `dbt_valid_from`, ...) marks the versions: the key is the
   best-named id, and when the id plus an ordered version column (a time, a date or a
   number that starts a version) is unique, the spec says `history by` that column (the
   entity's view holds each id's latest version). Otherwise, when a set of id and date
   columns is unique (a daily report: one row per date and campaign), that set is the
   table's **grain** and the spec says `grain ...` instead of a key; nothing may ref it.
   With no unique set at all, the key is the id-like column with the most distinct
   values, and the comment says it repeats.
4. Without data (DDL, YAML, an empty table), the same name preference picks the key.

Every choice not declared by the source carries its evidence in a `# guessed:` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from craftc.importer.conventions import (
    KEYABLE_KINDS, entity_words, id_base, is_id_like, is_version_column, type_kind,
)
from craftc.importer.model import SourceColumn, SourceTable

__all__ = ["KeyChoice", "choose_key"]


@dataclass(frozen=True)
class KeyChoice:
    column: SourceColumn
    guess: str = ""          # empty: declared by the source
    history: bool = False    # the key repeats, one row per version
    repeats: bool = False    # the key repeats and is no history id: nothing may ref it
    version: str = ""        # history: the ordered column (id, version) is unique over, for `history by`
    grain: tuple[str, ...] = ()   # a fact table's columns that together are unique: `grain`, no key


# A version column that ends a version (`valid_to`) is null on the current row: it cannot pick it.
_ENDS_A_VERSION = re.compile(r"(valid_to|valid_until|effective_to|end_date|_fivetran_end)$")
_ORDERED_KINDS = ("timestamp", "date", "int", "float")


def _named_after_table(col: SourceColumn, table: str) -> bool:
    words = entity_words(table)
    base = id_base(col.name)
    return bool(words) and bool(base) and base in ("_".join(words), words[-1], "".join(words))


def _rank(col: SourceColumn, index: int, table: str, names_other: set[str]) -> tuple:
    if col.name.lower() == "id":
        tier = 0
    elif _named_after_table(col, table):
        tier = 1
    elif is_id_like(col.name) and col.name not in names_other:
        tier = 2
    elif is_id_like(col.name):
        tier = 3
    else:
        tier = 4
    return tier, index


def _reason(col: SourceColumn, table: str) -> str:
    if col.name.lower() == "id":
        return "called `id`"
    if _named_after_table(col, table):
        return "named after the table"
    return "the first id-like column" if is_id_like(col.name) else "the first column that can hold ids"


def _declared(st: SourceTable) -> SourceColumn | None:
    by_name = {c.name: c for c in st.columns}
    if len(st.primary_key) == 1 and st.primary_key[0] in by_name:
        return by_name[st.primary_key[0]]
    declared = [c for c in st.columns if c.name in st.unique and not c.nullable]
    return declared[0] if len(declared) == 1 else None


def choose_key(st: SourceTable, names_other: set[str]) -> KeyChoice:
    """The key of a table; ``names_other`` are its columns whose names point at other tables."""
    declared = _declared(st)
    if declared is not None:
        return KeyChoice(declared)
    keyable = [c for c in st.columns if type_kind(c.type) in KEYABLE_KINDS] or st.columns[:1]
    ranked = sorted(keyable, key=lambda c: _rank(c, st.columns.index(c), st.name, names_other))
    if st.rows:
        unique = [c for c in ranked if c.distinct is not None and c.distinct == c.non_null == st.rows]
        if any(is_id_like(c.name) for c in ranked):
            # A measure (impressions) can be unique by chance; where ids exist, only an id keys.
            unique = [c for c in unique if is_id_like(c.name)]
        if unique:
            col = unique[0]
            return KeyChoice(col, f"key `{col.name}`: {_reason(col, st.name)}, unique and never null "
                                  f"in all {st.rows} rows")
        return _repeating_key(st, ranked)
    col = ranked[0]
    guess = f"key `{col.name}`: {_reason(col, st.name)} (no primary key declared"
    guess += ", the table is empty)" if st.rows == 0 else ", no data to check)"
    versions = [c.name for c in st.columns if is_version_column(c.name)]
    if versions and is_id_like(col.name):
        guess += f"; `{versions[0]}` suggests a history table where `{col.name}` repeats"
    return KeyChoice(col, guess)


def _orders_versions(st: SourceTable, version: str) -> bool:
    """Whether the largest value of ``version`` is an id's current row: an ordered type, and
    not a column that ends a version (null, or far in the future, on the current row)."""
    col = next((c for c in st.columns if c.name == version), None)
    return col is not None and type_kind(col.type) in _ORDERED_KINDS and not _ENDS_A_VERSION.search(version.lower())


def _repeating_key(st: SourceTable, ranked: list[SourceColumn]) -> KeyChoice:
    """No column is unique: a history table (an id plus a version is unique), a fact table
    (another set of columns is unique: its grain), or neither."""
    versions = [c.name for c in st.columns if is_version_column(c.name)]
    ids = [c for c in ranked if is_id_like(c.name) and c.non_null]
    grain = st.unique_sets[0] if st.unique_sets else ()
    grain_ids = [c for c in ids if c.name in grain]
    version = next((v for v in grain if v in versions), "")
    # checked: the id plus a version column, and nothing else, is unique: each row is one version
    checked = len(grain) == 2 and bool(version) and bool(grain_ids)
    if checked:
        col = grain_ids[0]
    elif versions and ids and not grain:     # versions named, but no unique set to check them by
        col = ids[0]
    else:          # no history: the column closest to unique (a stats table's finest grain)
        col = max(ids or ranked, key=lambda c: c.distinct or 0)
    counts = (f"{st.rows} rows, {col.distinct} distinct values" if col.distinct is not None
              else f"{st.rows} rows")
    if checked or (versions and ids and not grain):
        evidence = (f"(`{col.name}`, `{version}`) is unique in all {st.rows} rows" if checked
                    else f"`{versions[0]}` marks the versions")
        ordered = checked and _orders_versions(st, version)
        current = (f"; `history by {version}`: the view holds each id's latest version, its history "
                   "view every version" if ordered else
                   f"; the view holds every version, so a join on `{col.name}` matches several rows: review")
        return KeyChoice(col, f"history table: key `{col.name}` repeats ({counts}) and {evidence}; "
                              "one row per version" + current, history=True, version=version if ordered else "")
    nulls = "" if col.non_null in (None, st.rows) else f", null in {st.rows - col.non_null} rows"
    if grain:
        listed = ", ".join(grain)
        return KeyChoice(col, f"fact table: one row per ({listed}), unique and never null in all {st.rows} "
                              f"rows; no single column is unique (`{col.name}` repeats: {counts}{nulls}), so "
                              "the grain identifies a row and nothing may ref it", repeats=True, grain=grain)
    return KeyChoice(col, f"no column is unique and never null: key `{col.name}` repeats "
                          f"({counts}{nulls}); review, the table may need a key column", repeats=True)
