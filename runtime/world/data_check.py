"""Does the data bear out the spec? Each ref's containment, each enum's values, each key's uniqueness.

A spec is edited by hand after the import, and nothing else compares it with the rows: a
ref bound to the wrong column holds for no row, an enum can miss the only value present,
a key can repeat. This module measures each claim on the logical views of a built
warehouse (the world step's), so ``craftc check --preflight`` can report it at the spec's
line and the world step can say so before any teacher runs.

Example (not run here: needs a built warehouse)::

    con = duckdb.connect("runs/r/world/warehouse.duckdb", read_only=True)
    for finding in check_data(con, plan.recipe.schema_):
        print(finding.severity, finding.message)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DataFinding", "check_data", "REF_MIN_SHARE"]

# The share of a ref's non-null rows whose value is a target key below which the link is
# suspect (the importer guesses a ref from 90% of its distinct values on).
REF_MIN_SHARE = 0.9


@dataclass(frozen=True)
class DataFinding:
    """One measured claim of the spec. ``severity`` is ``ok``, ``warning`` or ``error``;
    ``code`` names the diagnostic a problem gets; ``member`` is the key, ref or field."""

    kind: str            # "key", "ref" or "enum"
    entity: str
    member: str
    severity: str
    code: str
    message: str
    help: str = ""


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _one(con, sql: str) -> tuple:
    return con.execute(sql).fetchone()


def _key(con, entity) -> DataFinding:
    """The key (or the grain: its columns together) unique and never null in the entity's view."""
    columns = entity.row_identity
    listed = ", ".join(_q(c) for c in columns)
    present = " AND ".join(f"{_q(c)} IS NOT NULL" for c in columns)
    rows, held, distinct = _one(con, f"SELECT count(*), count(*) FILTER (WHERE {present}), "
                                     f"count(DISTINCT ({listed})) FILTER (WHERE {present}) FROM {_q(entity.view)}")
    member = entity.key.name if entity.key is not None else ", ".join(entity.grain)
    what = (f"key `{entity.name}.{member}`" if entity.key is not None
            else f"grain `{entity.name}` ({member})")
    if held == distinct == rows:
        return DataFinding("key", entity.name, member, "ok", "", f"{what}: unique in all {rows:,} rows")
    problems = [f"{held - distinct:,} repeated value{'s' * (held - distinct != 1)}" if held > distinct else "",
                f"null in {rows - held:,} row{'s' * (rows - held != 1)}" if rows > held else ""]
    return DataFinding("key", entity.name, member, "warning", "W323",
                       f"{what} is not unique in its {rows:,} rows: {', '.join(p for p in problems if p)}",
                       "bind the key to a column that is unique (a join on this one repeats rows), or "
                       "deduplicate the table in the warehouse" if entity.key is not None else
                       "list every column that tells two rows apart in `grain`, or deduplicate the table")


def _ref(con, entity, ref, target) -> DataFinding:
    column, key = _q(f"{ref.name}_id"), _q(target.key.name)
    rows, held, found = _one(con, f"""
        SELECT count(*), count({column}),
               count(*) FILTER (WHERE CAST({column} AS VARCHAR) IN
                                (SELECT CAST({key} AS VARCHAR) FROM {_q(target.view)}))
        FROM {_q(entity.view)}""")
    what = f"ref `{entity.name}.{ref.name}` -> {target.name}"
    if rows and not held:
        return DataFinding("ref", entity.name, ref.name, "warning", "W321",
                           f"{what}: its column `{ref.column}` is null in all {rows:,} rows",
                           "a link with no value joins nothing: bind it to the column that holds the "
                           f"{target.name} keys, or make it a field")
    share = found / held if held else 1.0
    text = f"{what}: {found:,} of {held:,} rows with a value ({share:.1%}) are {target.name} keys"
    if held and not found:
        return DataFinding("ref", entity.name, ref.name, "error", "E320", text,
                           f"the column `{ref.column}` holds no {target.name} key at all: bind the ref to "
                           f"the right column (`-> column \"...\"`), or point it at the entity it holds keys of")
    if share < REF_MIN_SHARE:
        return DataFinding("ref", entity.name, ref.name, "warning", "W321", text,
                           f"below {REF_MIN_SHARE:.0%}: a join on it drops {held - found:,} rows; check the "
                           "binding, or clean the data")
    return DataFinding("ref", entity.name, ref.name, "ok", "", text)


def _enum(con, entity, field) -> DataFinding:
    column = _q(field.name)
    listed = ", ".join("'" + v.replace("'", "''") + "'" for v in field.type.values)
    held = _one(con, f"SELECT count({column}) FROM {_q(entity.view)}")[0]
    unknown = con.execute(f"""
        SELECT CAST({column} AS VARCHAR) AS value, count(*) AS n FROM {_q(entity.view)}
        WHERE {column} IS NOT NULL AND CAST({column} AS VARCHAR) NOT IN ({listed})
        GROUP BY 1 ORDER BY n DESC, value LIMIT 6""").fetchall()
    what = f"enum `{entity.name}.{field.name}`"
    if not unknown:
        return DataFinding("enum", entity.name, field.name, "ok", "",
                           f"{what}: every one of {held:,} values is listed")
    outside = _one(con, f"SELECT count(*) FROM {_q(entity.view)} WHERE {column} IS NOT NULL "
                        f"AND CAST({column} AS VARCHAR) NOT IN ({listed})")[0]
    shown = ", ".join(f"`{v}` ({n:,})" for v, n in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
    scope = "none of its" if outside == held else f"{outside:,} of its"
    return DataFinding("enum", entity.name, field.name, "warning", "W322",
                       f"{what}: {scope} {held:,} values {'is' if outside == 1 else 'are'} not listed: {shown}",
                       "add the values to `enum(...)` (params drawn from it miss these rows), or make the "
                       "field a `string`")


def check_data(con, schema) -> list[DataFinding]:
    """One finding per key, ref and enum field of ``schema``, in spec order, measured on
    the logical views of the open warehouse ``con``."""
    targets = {e.name: e for e in schema.entities}
    findings: list[DataFinding] = []
    for entity in schema.entities:
        findings.append(_key(con, entity))
        findings += [_ref(con, entity, ref, targets[ref.target]) for ref in entity.refs if ref.target in targets]
        findings += [_enum(con, entity, field) for field in entity.fields if field.type.kind == "enum"]
    return findings
