"""Diagnostics: what the compiler tells a user about a recipe, as data and as text.

Every problem the front end finds is a :class:`Diagnostic` with a stable code (see
:mod:`craftc.codes`), a one-line message, a source span, a ``help`` line and optional
notes. Diagnostics are collected, never raised, and shown together, sorted by place.

The text rendering follows rustc/ruff::

    error[E102]: unknown entity `Campaing`
     --> recipes/ads_analytics.craft:12:11
       |
    12 |   uses  Campaing, DailyStat
       |         ^^^^^^^^
    help: did you mean `Campaign`? (defined at schema_specs/ads.craft:40)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Literal, Mapping

from craftc.ir import Span

__all__ = [
    "Diagnostic", "Severity", "DiagnosticSink", "did_you_mean", "sort_diagnostics",
    "render_diagnostics", "diagnostics_to_json", "has_errors", "span_at",
]

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """One finding: a stable code, where it is, what is wrong and how to fix it.

    Example:
        >>> d = Diagnostic("E102", "error", "unknown entity `Campaing`", span_at("r.craft", 3, 9, 8))
        >>> d.location
        'r.craft:3:9'
    """

    code: str
    severity: Severity
    message: str
    span: Span | None = None
    help: str = ""
    notes: tuple[str, ...] = ()

    @property
    def location(self) -> str:
        if self.span is None:
            return "<unknown>"
        return f"{self.span.file}:{self.span.line}:{self.span.col}"

    def to_dict(self) -> dict:
        """The JSON twin of the rendered text."""
        span = None
        if self.span is not None:
            span = self.span.model_dump()
        return {
            "code": self.code, "severity": self.severity, "message": self.message,
            "span": span, "help": self.help, "notes": list(self.notes),
        }

    def rebased(self, file: str) -> "Diagnostic":
        """The same diagnostic with its span pointing at another name of the same file."""
        if self.span is None:
            return self
        return replace(self, span=self.span.model_copy(update={"file": file}))


def span_at(file: str, line: int, col: int, width: int = 1) -> Span:
    """A one-line span of ``width`` characters starting at ``line:col``."""
    return Span(file=file, line=line, col=col, end_line=line, end_col=col + max(width, 1))


@dataclass
class DiagnosticSink:
    """Collects diagnostics while a phase runs; phases never raise for user errors."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, code: str, message: str, span: Span | None, help: str = "",
              notes: Iterable[str] = ()) -> None:
        self.items.append(Diagnostic(code, "error", message, span, help, tuple(notes)))

    def warning(self, code: str, message: str, span: Span | None, help: str = "",
                notes: Iterable[str] = ()) -> None:
        self.items.append(Diagnostic(code, "warning", message, span, help, tuple(notes)))

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return has_errors(self.items)


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest known name to a misspelt one, or None when nothing is close.

    Only called on the error path, so it may scan every candidate.

    Example:
        >>> did_you_mean("Campaing", ["Campaign", "Advertiser"])
        'Campaign'
    """
    import difflib     # only the error path needs it

    pool = sorted(set(candidates))
    matches = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if not matches:
        lowered = {c.lower(): c for c in pool}
        matches = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
        matches = [lowered[m] for m in matches]
    return matches[0] if matches else None


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def _sort_key(d: Diagnostic) -> tuple:
    if d.span is None:
        return ("", 0, 0, d.code, d.message)
    return (d.span.file, d.span.line, d.span.col, d.code, d.message)


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sorted by (file, line, col, code), duplicates dropped, so output is stable."""
    unique = {(_sort_key(d), d.severity, d.help, d.notes): d for d in diagnostics}
    return [unique[k] for k in sorted(unique)]


def diagnostics_to_json(diagnostics: Iterable[Diagnostic]) -> str:
    """The JSON twin: a list of dicts, sorted like the text."""
    return json.dumps([d.to_dict() for d in sort_diagnostics(diagnostics)], indent=2,
                      sort_keys=True)


def _source_lines(file: str, sources: Mapping[str, str]) -> list[str] | None:
    text = sources.get(file)
    if text is None:
        # Diagnostics rebased onto cwd-relative paths can still show their excerpt.
        try:
            text = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            return None
    return text.splitlines()


def _excerpt(span: Span, sources: Mapping[str, str], color: bool) -> list[str]:
    lines = _source_lines(span.file, sources)
    if lines is None or not (1 <= span.line <= len(lines) + 1):
        return []
    text = lines[span.line - 1] if span.line <= len(lines) else ""
    gutter = " " * len(str(span.line))
    end = span.end_col if span.end_line == span.line else len(text) + 1
    text, col, width = _clip(text.replace("\t", " "), span.col, max(end - span.col, 1))
    carets = "^" * width
    if color:
        carets = f"\x1b[1;31m{carets}\x1b[0m"
    return [f"{gutter} |", f"{span.line} | {text}", f"{gutter} | {' ' * (col - 1)}{carets}"]


EXCERPT_WIDTH = 100


def _clip(text: str, col: int, width: int) -> tuple[str, int, int]:
    """A window of a long line around the span (a minified JSON file is one 70 KB line).

    Example:
        >>> _clip("x" * 500, 300, 3)[1:]
        (37, 3)
    """
    if len(text) <= EXCERPT_WIDTH:
        return text, col, width
    start = max(min(col - 1 - EXCERPT_WIDTH // 3, len(text) - EXCERPT_WIDTH), 0)
    window = text[start:start + EXCERPT_WIDTH]
    prefix = "..." if start else ""
    suffix = "..." if start + EXCERPT_WIDTH < len(text) else ""
    col = col - start + len(prefix)
    return prefix + window + suffix, col, max(min(width, EXCERPT_WIDTH - (col - len(prefix)) + 1), 1)


def render_diagnostic(d: Diagnostic, sources: Mapping[str, str], color: bool = False) -> str:
    head = f"{d.severity}[{d.code}]: {d.message}"
    if color:
        tint = "31" if d.severity == "error" else "33"
        head = f"\x1b[1;{tint}m{d.severity}[{d.code}]\x1b[0m\x1b[1m: {d.message}\x1b[0m"
    out = [head]
    if d.span is not None:
        out.append(f" --> {d.location}")
        out.extend(_excerpt(d.span, sources, color))
    out.extend(f"note: {note}" for note in d.notes)
    if d.help:
        out.append(f"help: {d.help}")
    return "\n".join(out)


def render_diagnostics(diagnostics: Iterable[Diagnostic], sources: Mapping[str, str] | None = None,
                       color: bool = False) -> str:
    """All diagnostics as text, sorted, with excerpts and a closing count line."""
    ordered = sort_diagnostics(diagnostics)
    blocks = [render_diagnostic(d, sources or {}, color) for d in ordered]
    errors = sum(d.severity == "error" for d in ordered)
    warnings = len(ordered) - errors
    if ordered:
        blocks.append(f"{errors} error{'s' * (errors != 1)}, "
                      f"{warnings} warning{'s' * (warnings != 1)}")
    return "\n\n".join(blocks) + ("\n" if blocks else "")
