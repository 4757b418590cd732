"""`--docs-from`: a warehouse's tables, types and data, with the docs and tests of dbt.

The warehouse is the truth for what exists and how it is typed; dbt adds what people
wrote about it: table and column descriptions, `unique`/`not_null` tests (a key),
`relationships` (a ref) and `accepted_values` (an enum). Tables are matched by name,
exactly, case-insensitively, then by their last part when that is unique
(`main.ad_history` in DuckDB is the dbt source `google_ads.ad_history`).
"""

from __future__ import annotations

from craftc.importer.model import SourceTable

__all__ = ["merge_dbt_docs"]


def _matcher(tables: list[SourceTable]):
    exact = {t.name: t for t in tables}
    lowered = {t.name.lower(): t for t in tables}
    bases: dict[str, list[SourceTable]] = {}
    for t in tables:
        bases.setdefault(t.name.split(".")[-1].lower(), []).append(t)

    def match(name: str) -> SourceTable | None:
        if name in exact:
            return exact[name]
        if name.lower() in lowered:
            return lowered[name.lower()]
        hits = bases.get(name.split(".")[-1].lower(), [])
        return hits[0] if len(hits) == 1 else None

    return match


def merge_dbt_docs(warehouse: list[SourceTable], dbt: list[SourceTable], origin: str) -> list[str]:
    """Copy dbt's docs and tests onto the warehouse tables in place; returns notes."""
    match = _matcher(warehouse)
    notes: list[str] = []
    unmatched = []
    for doc in dbt:
        st = match(doc.name)
        if st is None:
            unmatched.append(doc.name)
            continue
        st.comment = st.comment or doc.comment
        columns = {c.name.lower(): c for c in st.columns}
        for d in doc.columns:
            col = columns.get(d.name.lower())
            if col is None:
                continue
            col.comment = col.comment or d.comment
            col.nullable = col.nullable and d.nullable
            if d.values_declared:
                col.values, col.values_declared = d.values, True
            if d.name in doc.unique:
                st.unique.add(col.name)
        if not st.primary_key and len(doc.primary_key) == 1 and doc.primary_key[0].lower() in columns:
            st.primary_key = (columns[doc.primary_key[0].lower()].name,)
        declared = {c for c, _, _ in st.foreign_keys}
        for column, target, field in doc.foreign_keys:
            col, parent = columns.get(column.lower()), match(target)
            if col is not None and parent is not None and col.name not in declared:
                st.foreign_keys.append((col.name, parent.name, field))
    if unmatched:
        shown = ", ".join(f"`{n}`" for n in sorted(unmatched)[:8]) + (" ..." if len(unmatched) > 8 else "")
        notes.append(f"{len(unmatched)} dbt tables of {origin} are not in the warehouse: {shown}")
    return notes
