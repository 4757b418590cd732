"""Name checks shared by every checker: duplicates with "defined at" notes, profiles."""

from __future__ import annotations

from typing import Iterable

from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.ir import Span
from craftc.syntax import ProfileDecl, RecipeDecl

__all__ = ["where", "report_duplicates", "unknown_name", "check_profiles"]


def where(span: Span | None) -> str:
    """``file:line`` of a span, for "defined at" notes."""
    return f"{span.file}:{span.line}" if span else "<unknown>"


def report_duplicates(items: Iterable[tuple[str, Span]], what: str,
                      sink: DiagnosticSink) -> dict[str, Span]:
    """Report every repeated name (E101); returns name -> span of its first definition."""
    first: dict[str, Span] = {}
    for name, span in items:
        if name in first:
            sink.error("E101", f"duplicate {what} `{name}`", span,
                       f"rename or remove it; the first `{name}` is defined at {where(first[name])}")
        else:
            first[name] = span
    return first


def unknown_name(code: str, what: str, name: str, span: Span, known: dict[str, Span | None],
                 sink: DiagnosticSink, fallback: str = "", owner: str = "") -> None:
    """Report an unknown name with a did-you-mean pointing at the close match's definition."""
    guess = did_you_mean(name, known)
    if guess:
        at = known.get(guess)
        help_text = f"did you mean `{guess}`?" + (f" (defined at {where(at)})" if at else "")
    else:
        help_text = fallback or f"declare {what} `{name}` or fix the name"
    where_owner = f" in `{owner}`" if owner else ""
    sink.error(code, f"unknown {what} `{name}`{where_owner}", span, help_text)


def check_profiles(decl: RecipeDecl, selected: str | None,
                   sink: DiagnosticSink) -> dict[str, ProfileDecl]:
    """Declared profiles by name; reports duplicates and an unknown selected profile."""
    report_duplicates(((p.name, p.name_span) for p in decl.profiles), "profile", sink)
    profiles: dict[str, ProfileDecl] = {}
    for p in decl.profiles:
        profiles.setdefault(p.name, p)
    if selected is not None and selected not in profiles:
        known = ", ".join(f"`{n}`" for n in profiles) or "none"
        guess = did_you_mean(selected, profiles)
        help_text = (f"did you mean `{guess}`? " if guess else "") + f"known profiles: {known}"
        sink.error("E107", f"unknown profile `{selected}` for recipe `{decl.name}`",
                   decl.name_span, help_text)
    _check_bases(profiles, sink)
    return profiles


def _check_bases(profiles: dict[str, ProfileDecl], sink: DiagnosticSink) -> None:
    """Each `profile NAME extends BASE` names a declared profile (E107), and no chain of
    them comes back to where it started (E119, reported once, at its first profile)."""
    known = {name: p.name_span for name, p in profiles.items()}
    reported: set[str] = set()
    for profile in profiles.values():
        if profile.extends is None:
            continue
        if profile.extends not in profiles:
            unknown_name("E107", "profile", profile.extends, profile.extends_span, known, sink,
                         owner=f"profile {profile.name} extends {profile.extends}")
            continue
        path, current = [profile.name], profiles[profile.extends]
        while current.name not in path and current.extends in profiles:
            path.append(current.name)
            current = profiles[current.extends]
        if current.name == profile.name and not reported & set(path):
            reported.update(path)
            cycle = " -> ".join(f"`{name}`" for name in [*path, profile.name])
            sink.error("E119", f"profiles extend each other in a cycle: {cycle}", profile.extends_span,
                       f"a profile's base is applied before it; end the chain at a profile with no `extends`")
