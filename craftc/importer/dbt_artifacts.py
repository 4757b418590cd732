"""dbt's machine-readable truth: `target/manifest.json` and `target/catalog.json`.

The manifest holds models, seeds, snapshots and sources with their docs already
rendered, and the tests (`unique` + `not_null` make a key, `relationships` a ref,
`accepted_values` an enum). The catalog holds the column types the warehouse
reported. Importing either one reads its sibling too when it is there, so
`craftc import target/catalog.json` gets docs, and the manifest gets types.
"""

from __future__ import annotations

import json
from pathlib import Path

from craftc.diagnostics import Diagnostic, span_at
from craftc.importer.dbt_yaml import relation_name
from craftc.importer.merge import merge_same_relation
from craftc.importer.model import ImportFailed, SourceColumn, SourceTable

__all__ = ["read_dbt_artifacts", "artifact_kind"]

TABLE_KINDS = ("model", "seed", "snapshot", "source")


def _fail(code: str, message: str, file: str, line: int = 1, col: int = 1, help: str = "") -> ImportFailed:
    return ImportFailed([Diagnostic(code, "error", message, span_at(file, line, col), help)])


def _load_json(path: Path) -> dict:
    shown = path.as_posix()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail("E903", f"cannot read `{shown}`: {str(exc)[:200]}", shown,
                    help="check the file exists, is readable and is UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _fail("E906", f"cannot parse `{shown}` as JSON: {exc.msg}", shown, exc.lineno, exc.colno,
                    help="regenerate it with `dbt docs generate`") from None
    return data if isinstance(data, dict) else {}


def artifact_kind(data: dict) -> str:
    """`manifest`, `catalog` or ``""``, from the artifact's own `dbt_schema_version`."""
    version = str((data.get("metadata") or {}).get("dbt_schema_version", "")) if isinstance(data.get("metadata"), dict) else ""
    for kind in ("manifest", "catalog"):
        if f"/{kind}/" in version:
            return kind
    return ""


def _relation(node: dict) -> str:
    schema = str(node.get("schema") or "")
    name = str(node.get("identifier") or node.get("alias") or node.get("name") or "")
    return name if schema in ("", "main") else f"{schema}.{name}"


def read_dbt_artifacts(path: Path) -> tuple[list[SourceTable], list[str]]:
    """Tables from a manifest or catalog (and its sibling), or a located diagnostic."""
    data = _load_json(path)
    kind = artifact_kind(data)
    shown = path.as_posix()
    if not kind:
        raise _fail("E902", f"`{shown}` is JSON but not a dbt manifest.json or catalog.json", shown,
                    help="pass target/manifest.json or target/catalog.json (from `dbt docs generate`)")
    other = path.with_name("catalog.json" if kind == "manifest" else "manifest.json")
    sibling = artifact_kind(_load_json(other)) if other.is_file() else ""
    manifest = data if kind == "manifest" else (_load_json(other) if sibling == "manifest" else None)
    catalog = data if kind == "catalog" else (_load_json(other) if sibling == "catalog" else None)
    notes = [f"types from {other.name}" if kind == "manifest" else f"docs and tests from {other.name}"] if sibling else []
    tables = _from_manifest(manifest, catalog, shown) if manifest else _from_catalog(catalog, shown)
    # A seed and a source (or a snapshot and a model) may name one relation: one table.
    tables = merge_same_relation(tables, notes)
    if not tables:
        raise _fail("E904", f"`{shown}` describes no models, seeds or sources with columns", shown,
                    help="run `dbt docs generate` against a built warehouse, then import target/catalog.json")
    return tables, notes


def _catalog_nodes(catalog: dict | None) -> dict:
    if not catalog:
        return {}
    nodes = dict(catalog.get("nodes") or {})
    nodes.update(catalog.get("sources") or {})
    return {k: v for k, v in nodes.items() if isinstance(v, dict)}


def _from_catalog(catalog: dict, shown: str) -> list[SourceTable]:
    tables = []
    for _, node in sorted(_catalog_nodes(catalog).items()):
        meta = node.get("metadata") or {}
        st = SourceTable(name=_relation(meta), comment=str(meta.get("comment") or ""), file=shown,
                         kind="a catalog entry")
        for col in sorted((node.get("columns") or {}).values(), key=lambda c: c.get("index", 0)):
            st.columns.append(SourceColumn(name=str(col.get("name")), type=str(col.get("type") or "VARCHAR").upper(),
                                           comment=str(col.get("comment") or "")))
        if st.name and st.columns:
            tables.append(st)
    return tables


def _from_manifest(manifest: dict, catalog: dict | None, shown: str) -> list[SourceTable]:
    nodes = {k: v for k, v in {**(manifest.get("nodes") or {}), **(manifest.get("sources") or {})}.items()
             if isinstance(v, dict)}
    types = _catalog_nodes(catalog)
    tables: dict[str, SourceTable] = {}
    for uid, node in sorted(nodes.items()):
        if node.get("resource_type") not in TABLE_KINDS:
            continue
        st = SourceTable(name=_relation(node), comment=str(node.get("description") or "").strip(), file=shown,
                         kind=f"a dbt {node.get('resource_type')}")
        typed = {str(n).lower(): c for n, c in ((types.get(uid) or {}).get("columns") or {}).items()}
        declared = node.get("columns") or {}
        # The warehouse's column order when the catalog has it, then columns only documented.
        names = [c.get("name") for c in sorted(typed.values(), key=lambda c: c.get("index", 0))]
        names += [n for n in declared if str(n).lower() not in typed]
        declared = {str(n).lower(): d for n, d in declared.items()}
        for name in names:
            doc = declared.get(str(name).lower()) or {}
            dtype = str((typed.get(str(name).lower()) or {}).get("type") or doc.get("data_type") or "")
            st.columns.append(SourceColumn(name=str(name), type=dtype.upper() or "VARCHAR", type_known=bool(dtype),
                                           comment=str(doc.get("description") or "").strip()))
        if st.columns:
            tables[uid] = st
    _apply_tests(manifest, nodes, tables)
    return list(tables.values())


def _apply_tests(manifest: dict, nodes: dict, tables: dict[str, SourceTable]) -> None:
    for node in (manifest.get("nodes") or {}).values():
        meta = node.get("test_metadata") if isinstance(node, dict) else None
        if not meta or node.get("resource_type") != "test":
            continue
        kwargs = meta.get("kwargs") or {}
        parents = [n for n in (node.get("depends_on") or {}).get("nodes") or [] if n in tables]
        attached = node.get("attached_node") or (parents[0] if parents else None)
        st = tables.get(attached)
        column = kwargs.get("column_name") or node.get("column_name")
        col = next((c for c in st.columns if c.name == column), None) if st else None
        if col is None:
            continue
        name = str(meta.get("name"))
        if name == "not_null":
            col.nullable = False
        elif name == "unique":
            st.unique.add(col.name)
        elif name == "relationships":
            others = [p for p in parents if p != attached]
            target = tables[others[0]].name if others else relation_name(str(kwargs.get("to", "")))
            st.foreign_keys.append((col.name, target, str(kwargs.get("field", ""))))
        elif name == "accepted_values" and isinstance(kwargs.get("values"), list):
            col.values, col.values_declared = tuple(str(v) for v in kwargs["values"]), True
    for st in tables.values():
        pk = [c.name for c in st.columns if c.name in st.unique and not c.nullable]
        if len(pk) == 1:
            st.primary_key = (pk[0],)
