"""Write inferred entities as a `.craft` schema spec, guesses marked in comments."""

from __future__ import annotations

import re

from craftc.importer.infer import InferredEntity, InferredField

__all__ = ["write_schema_spec"]


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _quote(text: str) -> str:
    r"""A string literal of the language: its escapes are \\, \", \n and \t only."""
    text = CONTROL.sub("", text)
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\t", "\\t")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def _comment(text: str) -> str:
    """One comment line: a newline in a guess must not end the comment."""
    return " ".join(CONTROL.sub("", text).split())


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
    lines += [f"    # guessed: {_comment(note)}" for note in e.notes]
    if e.key_guess:
        lines.append(f"    # guessed: {_comment(e.key_guess)}")
    if e.key is not None:
        typed = " string" if e.key.kind == "string" else ""
        lines.append(f"    key {e.key.name}{typed} -> column {_quote(e.key.column)}")
    if e.grain:
        lines.append(f"    grain {', '.join(e.grain)}")
    if e.history_version:
        lines.append(f"    history by {e.history_version}")
    for r in e.refs:
        lines += [f"    # guessed: {_comment(c)}" for c in r.comments]
        doc = f" {_quote(r.doc)}" if r.doc else ""
        line = f"    ref {r.name} -> {r.target}{doc} -> column {_quote(r.column)}"
        lines.append(line + (" nullable" if r.nullable else ""))
    for f in e.fields:
        for guess in f.guesses:
            lines.append(f"    # guessed: {_comment(guess)}")
        lines.append(f"    {_field_line(f)}")
    lines.append("  }")
    return lines


def write_schema_spec(name: str, entities: list[InferredEntity], source: str, version: int = 1,
                      notes: list[str] | None = None) -> str:
    """The spec text; the same entities always give the same bytes."""
    out = [
        f"# Imported by `craftc import` from {_comment(source)}.",
        "# Review every `# guessed:` line, then add docs and metrics.",
        *(f"# note: {_comment(n)}" for n in notes or ()),
        f"schema {name} version {version} {{",
        f"  doc {_quote(f'Imported from {source}')}",
    ]
    for i, entity in enumerate(entities):
        out.append("")
        out.extend(_entity(entity))
    out.append("}")
    return _formatted("\n".join(out) + "\n")


def _formatted(text: str) -> str:
    """The spec in `craftc fmt`'s layout, so `craftc fmt --check` passes on it as written."""
    from craftc.fmt import FormatError, format_source

    try:
        return format_source(text, "imported.craft")
    except FormatError:        # never expected: the writer only emits valid syntax
        return text
