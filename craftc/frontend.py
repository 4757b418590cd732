"""The front end's one door: read, parse, lower and check recipe and schema files.

``load_recipe(path)`` never raises for bad input: unreadable files, syntax errors,
unknown names and bad values all come back as diagnostics, and ``recipe`` is None
when any of them is an error. Spans name files relative to the directory of the
top-level file (forward slashes), so the IR does not depend on the working directory.
"""

from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from craftc import syntax_cache
from craftc.check import check_recipe, check_schema
from craftc.check.names import check_profiles
from craftc.diagnostics import (
    Diagnostic, DiagnosticSink, diagnostics_to_json, has_errors, render_diagnostics,
    sort_diagnostics, span_at,
)
from craftc.ir import Recipe, Schema
from craftc.lower import LoweringContext, apply_profiles, lower_recipe, lower_schema, profile_chain
from craftc.syntax import RecipeDecl, SchemaDecl, SourceFile

__all__ = ["LoadResult", "load_recipe", "load_schema", "check_paths", "read_source"]


@dataclass
class LoadResult:
    """What loading a file produced.

    Attributes:
        recipe: the checked IR, or None when any error was found (or for a schema).
        schema: the schema IR (set for schemas, and for recipes whose schema loaded).
        diagnostics: every finding, sorted by (file, line, col, code).
        sources: span file name -> text of every file read (for excerpts).
        root: the directory span file names are relative to.
        solution_sources: plan-dir solution path -> absolute path of the source file.
    """

    recipe: Recipe | None
    diagnostics: list[Diagnostic]
    sources: dict[str, str]
    root: Path = field(default_factory=Path)
    schema: Schema | None = None
    solution_sources: dict[str, Path] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    def display_diagnostics(self) -> list[Diagnostic]:
        """The diagnostics with file names relative to the working directory (for users).

        File names inside help and notes ("defined at FILE:LINE") are rewritten too.
        """
        names = {k: display_path(self.root, k) for k in self.sources}
        pattern = re.compile(r"(?<![\w./-])(" + "|".join(
            re.escape(k) for k in sorted(names, key=len, reverse=True)) + r")(?=:\d)") \
            if names else None

        def fix(text: str) -> str:
            return pattern.sub(lambda m: names[m.group(1)], text) if pattern else text

        out = []
        for d in self.diagnostics:
            d = replace(d, help=fix(d.help), notes=tuple(fix(n) for n in d.notes))
            out.append(d.rebased(display_path(self.root, d.span.file)) if d.span else d)
        return out

    def render(self, color: bool = False) -> str:
        """Human text: rustc-style diagnostics with excerpts, paths relative to cwd."""
        sources = {display_path(self.root, k): v for k, v in self.sources.items()}
        return render_diagnostics(self.display_diagnostics(), sources, color)

    def to_json(self) -> str:
        return diagnostics_to_json(self.display_diagnostics())


def display_path(root: Path, file: str) -> str:
    """A span file name as the user would type it from the working directory."""
    full = os.path.normpath(root / file)
    try:
        rel = os.path.relpath(full)
    except ValueError:   # another drive on Windows
        return full.replace(os.sep, "/")
    return (full if rel.startswith("../..") else rel).replace(os.sep, "/")


def span_name(root: Path, path: Path) -> str:
    """A file's name in spans: relative to ``root``, forward slashes."""
    return os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")


def read_source(path: Path, name: str, sink: DiagnosticSink, at=None) -> str | None:
    """The text of a file, or None after reporting E001/E002 (at the span that named it)."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        sink.error("E001", f"`{name}` is a directory, not a .craft file", at,
                   "name a .craft file inside it")
        return None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        sink.error("E001", f"cannot read `{name}`: {reason.lower()}", at,
                   "check the path (relative paths are relative to the file that names them)")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        sink.error("E002", f"`{name}` is not UTF-8 text (byte {err.start})", at,
                   "save the file as UTF-8")
        return None


# ---------------------------------------------------------------- schemas


@contextmanager
def _no_gc_pauses():
    """Pause the cyclic GC while loading: the front end builds many small acyclic objects,
    and collections triggered by them made large schemas superlinear (measured: 2,500
    entities 20x slower than 250). Reference counting still frees everything."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse(path: Path, name: str, sink: DiagnosticSink, sources: dict[str, str],
           at=None) -> SourceFile | None:
    """The syntax tree of a file, from the parse cache when it has it; None when the file
    cannot be read or does not parse (diagnostics say why)."""
    text = read_source(path, name, sink, at)
    if text is None:
        return None
    sources[name] = text
    tree = syntax_cache.lookup(path, name, text)
    if tree is None:
        tree = _parse_text(path, name, text, sink)
    return tree


def _parse_text(path: Path, name: str, text: str, sink: DiagnosticSink) -> SourceFile | None:
    # The parser is imported here, not at the top of the module: it brings lark, whose
    # import, tables and lexer cost about 60 ms, and a warm compile takes every syntax
    # tree from the cache without parsing anything.
    from craftc.parser import parse_source

    parsed = parse_source(text, name)
    sink.extend(parsed.diagnostics)
    if parsed.syntax is not None and not parsed.diagnostics:
        syntax_cache.store(path, name, text, parsed.syntax)
    return parsed.syntax


def _one_schema(parsed: SourceFile, sink: DiagnosticSink, at=None) -> SchemaDecl | None:
    schemas = parsed.schemas
    if not schemas:
        what = "a recipe" if parsed.recipes else "nothing"
        sink.error("E008", f"`{parsed.file}` holds no schema (it holds {what})",
                   at or span_at(parsed.file, 1, 1),
                   "a schema spec starts with `schema NAME version N {`")
        return None
    for extra in schemas[1:]:
        sink.error("E010", f"`{parsed.file}` declares more than one schema", extra.span,
                   "keep one schema per file")
    return schemas[0]


def load_schema(path: str | os.PathLike) -> LoadResult:
    """Load and check a schema spec on its own (spans relative to its directory).

    Example:
        >>> r = load_schema("no/such/file.craft")
        >>> r.diagnostics[0].code
        'E001'
    """
    with _no_gc_pauses():
        return _load_schema(path)


def _load_schema(path: str | os.PathLike) -> LoadResult:
    path = Path(path)
    root = path.parent
    sink, sources = DiagnosticSink(), {}
    name = path.name
    schema = None
    parsed = _parse(path, name, sink, sources)
    if parsed is not None:
        decl = _one_schema(parsed, sink)
        if decl is not None:
            check_schema(decl, sink)
            schema = _safe(lambda: lower_schema(decl, name), sink)
    return LoadResult(recipe=None, diagnostics=sort_diagnostics(sink.items), sources=sources,
                      root=root, schema=schema)


def _safe(build, sink: DiagnosticSink):
    """Run an IR constructor; a validation failure is our bug, reported without a traceback."""
    try:
        return build()
    except (ValidationError, ValueError, TypeError, KeyError) as err:
        sink.error("E005", f"internal error while building the IR: {type(err).__name__}",
                   None, "please report this together with the recipe",
                   (str(err).splitlines()[0][:200],))
        return None


# ---------------------------------------------------------------- recipes


def load_recipe(path: str | os.PathLike, profile: str | None = None) -> LoadResult:
    """Load, lower and check a recipe and its schema.

    Args:
        path: the recipe file.
        profile: a profile declared in the recipe to apply, or None (or "default", unless
            the recipe declares a profile of that name) for the recipe as written.

    Returns:
        A LoadResult whose ``recipe`` is None when any error was found.

    Example:
        >>> load_recipe("missing.craft").diagnostics[0].message
        'cannot read `missing.craft`: no such file or directory'
    """
    with _no_gc_pauses():
        return _load_recipe(path, profile)


def _load_recipe(path: str | os.PathLike, profile: str | None = None) -> LoadResult:
    path = Path(path)
    root = path.parent
    sink, sources = DiagnosticSink(), {}
    result = LoadResult(recipe=None, diagnostics=[], sources=sources, root=root)
    name = path.name
    parsed = _parse(path, name, sink, sources)
    decl = _one_recipe(parsed, sink) if parsed is not None else None
    if decl is not None:
        result.schema = _load_used_schema(decl, path, root, sink, sources)
        if result.schema is not None:
            result.recipe = _lower_and_check(decl, result, profile, sink, sources)
    result.diagnostics = sort_diagnostics(sink.items)
    if has_errors(result.diagnostics):
        result.recipe = None
    return result


def _one_recipe(parsed: SourceFile, sink: DiagnosticSink) -> RecipeDecl | None:
    recipes = parsed.recipes
    if not recipes:
        if parsed.schemas:
            sink.error("E007", f"`{parsed.file}` is a schema spec, not a recipe",
                       parsed.schemas[0].span,
                       "pass the recipe that uses it (`uses schema \"...\"`), e.g. "
                       "recipes/ads_analytics.craft")
        else:
            sink.error("E007", f"`{parsed.file}` holds no recipe", span_at(parsed.file, 1, 1),
                       "a recipe starts with `recipe NAME {`")
        return None
    for extra in recipes[1:]:
        sink.error("E010", f"`{parsed.file}` declares more than one recipe", extra.name_span,
                   "keep one recipe per file")
    if parsed.schemas:
        # A schema inline next to its recipe is allowed only through `uses schema`.
        sink.error("E010", f"`{parsed.file}` declares a schema next to its recipe",
                   parsed.schemas[0].span,
                   "move the schema to its own file and name it with `uses schema \"...\"`")
    return recipes[0]


def _load_used_schema(decl: RecipeDecl, path: Path, root: Path, sink: DiagnosticSink,
                      sources: dict[str, str]) -> Schema | None:
    if not decl.uses_schema:
        sink.error("E009", f"recipe `{decl.name}` does not use a schema", decl.name_span,
                   'add `uses schema "../schema_specs/NAME.craft"` (relative to this file)')
        return None
    for extra in decl.uses_schema[1:]:
        sink.error("E010", "`uses schema` appears more than once", extra.span,
                   "a recipe uses exactly one schema; keep one line")
    ref = decl.uses_schema[0]
    schema_path = path.parent / ref.python
    name = span_name(root, schema_path)
    parsed = _parse(schema_path, name, sink, sources, at=ref.span)
    if parsed is None:
        return None
    schema_decl = _one_schema(parsed, sink, at=ref.span)
    if schema_decl is None:
        return None
    check_schema(schema_decl, sink)
    return _safe(lambda: lower_schema(schema_decl, ref.python), sink)


def _lower_and_check(decl: RecipeDecl, result: LoadResult, profile: str | None,
                     sink: DiagnosticSink, sources: dict[str, str]) -> Recipe | None:
    if profile == "default" and all(p.name != "default" for p in decl.profiles):
        profile = None      # `--profile default` names the recipe as written
    profiles = check_profiles(decl, profile, sink)
    ctx = LoweringContext(recipe_dir=result.root, root=result.root, schema=result.schema,
                          profile=profile)
    selected = apply_profiles(decl, profile_chain(profiles, profile)) if profile in profiles else decl
    recipe = _safe(lambda: lower_recipe(selected, ctx, sink), sink)
    result.solution_sources = dict(ctx.solution_sources)
    if recipe is not None:
        check_recipe(selected, recipe, ctx, sink, sources)
    # Profiles not selected are still checked, so `craftc check` catches their mistakes.
    # Bases before the profiles that extend them, so a finding is reported plainly first.
    for name, prof in sorted(profiles.items(), key=lambda item: len(profile_chain(profiles, item[0]))):
        if name == profile:
            continue
        variant_sink = DiagnosticSink()
        variant_ctx = LoweringContext(recipe_dir=result.root, root=result.root, schema=result.schema,
                                      profile=name, lowered_workflows=ctx.lowered_workflows)
        chain = profile_chain(profiles, name)
        merged = apply_profiles(decl, chain)
        variant = _safe(lambda: lower_recipe(merged, variant_ctx, variant_sink), variant_sink)
        if variant is not None:
            check_recipe(merged, variant, variant_ctx, variant_sink, sources, workflows=False)
        sink.extend(_profile_findings(variant_sink.items, chain, sink.items))
    return recipe


def _profile_findings(found: list[Diagnostic], chain: tuple, known: list[Diagnostic]) -> list[Diagnostic]:
    """What checking a profile found that the recipe's own check did not: the findings inside
    the profile, and inside the bases it extends. A base's setting may clash only with what
    this profile adds; such a finding gets a note naming the profile, and one the base's own
    check reported is not repeated."""
    prof, out = chain[-1], []
    for d in found:
        if d in known or (d.span is not None and not any(_inside(d, p) for p in chain)):
            continue
        if d.span is not None and not _inside(d, prof):
            d = replace(d, notes=(*d.notes, f"with profile `{prof.name}`, which extends `{prof.extends}`"))
        out.append(d)
    return out


def _inside(d: Diagnostic, prof) -> bool:
    """Whether a diagnostic points into a profile (others repeat the base recipe's)."""
    s, p = d.span, prof.span
    return s.file == p.file and (p.line, p.col) <= (s.line, s.col) <= (p.end_line, p.end_col)


def check_paths(paths) -> list[Diagnostic]:
    """Check several files (recipes or schema specs, told apart by content).

    Spans are rebased onto paths relative to the working directory so that the
    diagnostics of several files sort and render together.
    """
    out: list[Diagnostic] = []
    for p in paths:
        p = Path(p)
        loader = load_schema if looks_like_schema(p) else load_recipe
        out.extend(loader(p).display_diagnostics())
    return sort_diagnostics(out)


def looks_like_schema(path: Path) -> bool:
    """Whether a file declares a schema (its first word is `schema`) rather than a recipe."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in head.splitlines():
        word = line.split("#", 1)[0].strip().split(" ", 1)[0]
        if word:
            return word == "schema"
    return False
