"""`--docs-from`: a warehouse's tables, types and data, with the docs and tests of dbt.

The warehouse is the truth for what exists and how it is typed; dbt adds what people
wrote about it: table and column descriptions, `unique`/`not_null` tests (a key),
`relationships` (a ref) and `accepted_values` (an enum). Tables are matched by name,
exactly, case-insensitively, then by their last part when that is unique
(`main.ad_history` in DuckDB is the dbt source `google_ads.ad_history`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from craftc.importer.model import SourceColumn, SourceTable

__all__ = ["merge_dbt_docs", "merge_same_relation", "DocsMatch"]


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


def _listed(names: list[str], width: int = 100) -> list[str]:
    """Names as backquoted, comma-separated lines of about ``width`` characters: all of them."""
    lines, line = [], ""
    for n in sorted(names):
        item = f"`{n}`"
        if line and len(line) + len(item) + 2 > width:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {item}" if line else item
    return lines + ([line] if line else [])


def merge_dbt_docs(warehouse: list[SourceTable], dbt: list[SourceTable], origin: str,
                   report: list[str] | None = None, file: str = "") -> list[str]:
    """Copy dbt's docs and tests onto the warehouse tables in place; returns notes for the spec.

    ``report`` receives what the command prints: how many dbt tables matched, which did
    not. When dbt describes tables and none of them is in the warehouse, nothing would be
    documented: that is error E911, not a spec without docs.
    """
    match = _matcher(warehouse)
    notes: list[str] = []
    unmatched, matched = [], []
    for doc in dbt:
        st = match(doc.name)
        if st is None:
            unmatched.append(doc.name)
            continue
        matched.append(st.name)
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
    undocumented = sorted({t.name for t in warehouse} - set(matched))
    if dbt and not matched:
        from craftc.diagnostics import Diagnostic, span_at
        from craftc.importer.model import ImportFailed

        shown = file or origin
        raise ImportFailed([Diagnostic(
            "E911", "error", f"none of the {len(dbt)} dbt tables of `{origin}` is a table of the warehouse "
                             f"(dbt: {', '.join(sorted(t.name for t in dbt)[:4])}{' ...' if len(dbt) > 4 else ''}; "
                             f"warehouse: {', '.join(sorted(t.name for t in warehouse)[:4])}"
                             f"{' ...' if len(warehouse) > 4 else ''})",
            span_at(shown, 1, 1),
            "point --docs-from at the dbt project (or its target/manifest.json) that describes this "
            "warehouse; tables match by name, case-insensitively, or by their last part")])
    summary = f"docs from {origin}: {len(set(matched))} of {len(dbt)} dbt tables matched a warehouse table"
    notes.append(summary)
    if report is not None:
        report.append(summary)
    if unmatched:
        lines = _listed(unmatched)
        head = f"{len(unmatched)} dbt tables of {origin} are not in the warehouse:"
        notes += [f"{head} {lines[0]}"] if len(lines) == 1 else [head, *lines]
        if report is not None:
            report.append(f"not in the warehouse ({len(unmatched)}): " + " ".join(lines))
    if undocumented and report is not None:
        report.append(f"warehouse tables dbt does not describe ({len(undocumented)}): "
                      + " ".join(_listed(undocumented)))
    return notes


def _merge_column(into: SourceColumn, other: SourceColumn) -> None:
    if not into.type_known and other.type_known:
        into.type, into.type_known = other.type, True
    into.comment = into.comment or other.comment
    into.nullable = into.nullable and other.nullable
    if other.values_declared and not into.values_declared:
        into.values, into.values_declared = other.values, True
    for attr in ("non_null", "distinct", "value_set", "value_counts"):
        if getattr(into, attr) is None and getattr(other, attr) is not None:
            setattr(into, attr, getattr(other, attr))
    if not into.values and other.values:
        into.values = other.values


def merge_same_relation(tables: list[SourceTable], notes: list[str]) -> list[SourceTable]:
    """One table per relation: a dbt seed and a source (or a model) that name the same
    relation describe one table, so their columns, docs and tests are merged into the
    first one (case-insensitively by name); a note names what was merged."""
    seen: dict[str, SourceTable] = {}
    out: list[SourceTable] = []
    for st in tables:
        first = seen.get(st.name.lower())
        if first is None:
            seen[st.name.lower()] = st
            out.append(st)
            continue
        columns = {c.name.lower(): c for c in first.columns}
        for col in st.columns:
            if col.name.lower() in columns:
                _merge_column(columns[col.name.lower()], col)
            else:
                first.columns.append(col)
                columns[col.name.lower()] = col
        first.comment = first.comment or st.comment
        first.unique |= {columns[c.lower()].name for c in st.unique if c.lower() in columns}
        if not first.primary_key:
            first.primary_key = st.primary_key
        known = {c for c, _, _ in first.foreign_keys}
        first.foreign_keys += [fk for fk in st.foreign_keys if fk[0] not in known]
        if first.rows is None:
            first.rows = st.rows
        notes.append(f"`{st.name}` is described twice (as {first.kind or 'a table'} and as "
                     f"{st.kind or 'a table'}); merged into one entity")
    return out
