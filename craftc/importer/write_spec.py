"""Write inferred entities as a `.craft` schema spec, guesses marked in comments."""

from __future__ import annotations

import json

from craftc.importer.infer import InferredEntity, InferredField

__all__ = ["write_schema_spec"]


def _quote(text: str) -> str:
    # JSON string escapes are a subset of the language's: quotes, backslashes, \n.
    return json.dumps(text, ensure_ascii=False)


def _type(f: InferredField) -> str:
    return f"enum({', '.join(f.values)})" if f.kind == "enum" else f.kind


def _field_line(f: InferredField) -> str:
    parts = [f"field {f.name} {_type(f)}"]
    if f.doc:
        parts.append(_quote(f.doc))
    if f.column != f.name or f.scale is not None:
        parts.append(f"-> column {_quote(f.column)}")
        if f.scale is not None:
            parts.append(f"scale {f.scale:g}")
    if f.nullable:
        parts.append("nullable")
    return " ".join(parts)


def _entity(e: InferredEntity) -> list[str]:
    lines = [f"  entity {e.name} {{"]
    if e.doc:
        lines.append(f"    doc {_quote(e.doc)}")
    lines.append(f"    table {_quote(e.table)}")
    if e.key_guess:
        lines.append(f"    # guessed: {e.key_guess}")
    lines.append(f"    key id -> column {_quote(e.key.column)}")
    for r in e.refs:
        if r.guess:
            lines.append(f"    # guessed: {r.guess}")
        line = f"    ref {r.name} -> {r.target} -> column {_quote(r.column)}"
        lines.append(line + (" nullable" if r.nullable else ""))
    for f in e.fields:
        for guess in f.guesses:
            lines.append(f"    # guessed: {guess}")
        lines.append(f"    {_field_line(f)}")
    lines.append("  }")
    return lines


def write_schema_spec(name: str, entities: list[InferredEntity], source: str, version: int = 1) -> str:
    """The spec text; the same entities always give the same bytes."""
    out = [
        f"# Imported by `craftc import` from {source}.",
        "# Review every `# guessed:` line, then add docs and metrics.",
        f"schema {name} version {version} {{",
        f"  doc {_quote(f'Imported from {source}')}",
    ]
    for i, entity in enumerate(entities):
        out.append("")
        out.extend(_entity(entity))
    out.append("}")
    return "\n".join(out) + "\n"
