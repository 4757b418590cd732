"""A dbt project's seed CSVs: real types and data behind the tables its YAML describes.

`dbt seed` loads each CSV under the project's `seed-paths` as a table; the importer
loads them the same way into an in-memory DuckDB, so the YAML's tables get column
types and the data evidence keys, refs and enums are checked against. A seed matches
a YAML table by its last name part (`seeds/ad_history.csv` backs the source table
`google_ads.ad_history`); a seed no YAML describes is imported as a table of its own.
"""

from __future__ import annotations

from pathlib import Path

from craftc.diagnostics import Diagnostic, span_at
from craftc.importer.model import ImportFailed, SourceTable

__all__ = ["seed_paths", "add_seed_evidence"]


def seed_paths(root: Path, project: dict) -> list[Path]:
    folders = project.get("seed-paths") if isinstance(project.get("seed-paths"), list) else ["seeds"]
    return sorted(p for folder in folders for p in (root / str(folder)).rglob("*.csv") if p.is_file())


def _load(csvs: list[Path]) -> list[SourceTable]:
    import duckdb

    from craftc.importer.sources import read_duckdb_connection

    con = duckdb.connect(config={"threads": 1})
    try:
        for csv in csvs:
            try:
                con.execute(f'CREATE TABLE "{csv.stem.replace(chr(34), "")}" AS SELECT * FROM read_csv(?)',
                            [str(csv)])
            except duckdb.Error as exc:
                shown = csv.as_posix()
                raise ImportFailed([Diagnostic(
                    "E903", "error", f"cannot read the seed `{shown}` as CSV: {str(exc).splitlines()[0][:200]}",
                    span_at(shown, 1, 1), "fix the CSV, or move it out of the project's seed-paths")]) from None
        return read_duckdb_connection(con, "seeds")
    finally:
        con.close()


def add_seed_evidence(tables: list[SourceTable], csvs: list[Path], notes: list[str]) -> list[SourceTable]:
    """``tables`` with types and data from the seeds that back them, plus undescribed seeds."""
    if not csvs:
        return tables
    seeds = {st.name.lower(): st for st in _load(csvs)}
    by_base: dict[str, list[SourceTable]] = {}
    for st in tables:
        by_base.setdefault(st.name.split(".")[-1].lower(), []).append(st)
    used = set()
    for base, described in by_base.items():
        seed = seeds.get(base)
        if seed is None or len(described) != 1:
            continue
        used.add(base)
        _copy_evidence(seed, described[0])
    extra = [seed for name, seed in sorted(seeds.items()) if name not in used]
    notes.append(f"types and data from {len(seeds)} seed CSVs" +
                 (f" ({len(extra)} not described in YAML, imported as they are)" if extra else ""))
    return tables + extra


def _copy_evidence(seed: SourceTable, st: SourceTable) -> None:
    columns = {c.name.lower(): c for c in seed.columns}
    st.rows = seed.rows
    names = {c.name.lower(): c.name for c in st.columns}
    st.unique_sets = [tuple(names[n.lower()] for n in s) for s in seed.unique_sets
                      if all(n.lower() in names for n in s)]
    for col in st.columns:
        found = columns.get(col.name.lower())
        if found is None:
            continue
        if not col.type_known:
            col.type, col.type_known = found.type, True
        col.non_null, col.distinct, col.value_set = found.non_null, found.distinct, found.value_set
        col.value_counts = found.value_counts
        if not col.values_declared:
            col.values = found.values
