"""dbt projects and their YAML property files, with the Jinja dbt would render.

dbt YAML holds Jinja (`"{{ var('ads_schema', 'ads') }}"`, `"{{ doc('cost') }}"`) that
only dbt renders. The importer renders it the same way, with jinja2 and a small
environment: `var()` reads the `vars:` of dbt_project.yml (then the default given in
the call), `doc()` the `{% docs name %}` blocks of the project's .md files, `ref()`
and `source()` name the relation, `env_var()` returns its default. Anything else
(a project macro) is reported with its place (E909), never kept as text.

Example:
    >>> ctx = DbtContext(vars={"ads_schema": "google_ads"})
    >>> render_jinja("{{ var('ads_schema', 'ads') }}.campaign", ctx)
    'google_ads.campaign'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from craftc.diagnostics import Diagnostic, span_at
from craftc.importer.dbt_seeds import add_seed_evidence, seed_paths
from craftc.importer.model import ImportFailed, SourceColumn, SourceTable

__all__ = ["DbtContext", "render_jinja", "relation_name", "read_dbt_yaml", "read_dbt_project", "is_dbt_project_file",
           "load_yaml"]

DOCS_BLOCK = re.compile(r"{%-?\s*docs\s+([A-Za-z_][\w]*)\s*-?%}(.*?){%-?\s*enddocs\s*-?%}", re.S)
SKIPPED_DIRS = {"target", "dbt_packages", "dbt_modules", "logs", ".git", "node_modules"}
PROJECT_FILES = {"dbt_project.yml", "packages.yml", "dependencies.yml", "selectors.yml", "profiles.yml"}


def _fail(code: str, message: str, file: str, line: int = 1, col: int = 1, help: str = "") -> ImportFailed:
    return ImportFailed([Diagnostic(code, "error", message, span_at(file, line, col), help)])


@dataclass
class DbtContext:
    vars: dict = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)
    project: str = ""
    seeds: list[Path] = field(default_factory=list)    # the project's seed CSVs


class _RenderError(Exception):
    pass


def render_jinja(text: str, ctx: DbtContext, depth: int = 0) -> str:
    """`text` with its Jinja rendered; raises jinja2.TemplateError or _RenderError."""
    if "{{" not in text and "{%" not in text:
        return text
    if depth > 5:
        raise _RenderError("Jinja nested more than 5 levels deep (a var that refers to itself?)")
    return _environment().from_string(text).render(**_globals(ctx, depth)).strip()


def _environment():
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


def _globals(ctx: DbtContext, depth: int) -> dict:
    missing = object()

    def var(name, default=missing):
        if name in ctx.vars:
            value = ctx.vars[name]
            return render_jinja(value, ctx, depth + 1) if isinstance(value, str) else value
        if default is missing:
            raise _RenderError(f"dbt var `{name}` has no value and no default")
        return default

    def doc(*names):
        name = names[-1]
        if name not in ctx.docs:
            raise _RenderError(f"doc block `{name}` is not defined in any .md file of the project")
        return render_jinja(ctx.docs[name], ctx, depth + 1)

    def env_var(name, default=""):
        return default

    return {"var": var, "doc": doc, "env_var": env_var,
            "ref": lambda *names, **_: names[-1], "source": lambda src, table: f"{src}.{table}",
            "target": {"name": "dev", "schema": "main", "type": "duckdb", "database": ""}}


# ------------------------------------------------------------------ YAML with places


class _Str(str):
    line = col = 1


class _Map(dict):
    line = col = 1


def _loader():
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def located_str(loader, node):
        s = _Str(loader.construct_scalar(node))
        s.line, s.col = node.start_mark.line + 1, node.start_mark.column + 1
        return s

    def located_map(loader, node):
        data = _Map()
        data.line, data.col = node.start_mark.line + 1, node.start_mark.column + 1
        yield data
        loader.flatten_mapping(node)
        data.update(loader.construct_mapping(node))

    Loader.add_constructor("tag:yaml.org,2002:str", located_str)
    Loader.add_constructor("tag:yaml.org,2002:map", located_map)
    return Loader


def load_yaml(path: Path, shown: str):
    """The YAML of a file, mappings and strings carrying their line and column."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail("E903", f"cannot read `{shown}`: {exc}", shown,
                    help="check the file exists, is readable and is UTF-8 text") from None
    try:
        return yaml.load(text, Loader=_loader())   # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise _fail("E906", f"cannot parse `{shown}` as YAML: {getattr(exc, 'problem', exc)}", shown,
                    (mark.line + 1) if mark else 1, (mark.column + 1) if mark else 1,
                    help="fix the YAML syntax at this place") from None


def _place(node, parent=None) -> tuple[int, int]:
    for n in (node, parent):
        if hasattr(n, "line"):
            return n.line, n.col
    return 1, 1


class _Reader:
    """Reads the dbt property files of one project with one Jinja context."""

    def __init__(self, ctx: DbtContext, root: Path | None = None):
        self.ctx = ctx
        self.notes: list[str] = []
        self.root = root.as_posix().rstrip("/") + "/" if root is not None else ""

    def relative(self, shown: str) -> str:
        """A path in a note written into the spec: relative to the project, the same on every machine."""
        return shown[len(self.root):] if self.root and shown.startswith(self.root) else Path(shown).name

    def text(self, value, shown: str, parent=None) -> str:
        if value is None:
            return ""
        if not isinstance(value, str):
            return str(value)
        try:
            return str(render_jinja(str(value), self.ctx))
        except Exception as exc:   # jinja2.TemplateError, _RenderError: a place, not a traceback
            line, col = _place(value, parent)
            message = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise _fail("E909", f"cannot render the dbt Jinja `{_short(value)}`: {message}", shown, line, col,
                        help="define the var under `vars:` in dbt_project.yml, the doc in a "
                             "`{% docs %}` block of a .md file, or replace the macro by its value") from None

    def items(self, doc, key: str, shown: str) -> list:
        value = doc.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            line, col = _place(value, doc)
            raise _fail("E910", f"`{key}:` in `{shown}` is not a list of entries", shown, line, col,
                        help=f"write `{key}:` as a list: `- name: ...` per entry (is this a dbt property file?)")
        return value

    def file(self, path: Path, shown: str) -> list[SourceTable]:
        doc = load_yaml(path, shown)
        if not isinstance(doc, dict):
            return []
        tables: list[SourceTable] = []
        for source in self.items(doc, "sources", shown):
            prefix = self.text(source.get("schema") or source.get("name"), shown, source)
            for t in self.items(source, "tables", shown):
                name = self.text(t.get("identifier") or t.get("name"), shown, t)
                tables += self.table(f"{prefix}.{name}" if prefix else name, t, shown)
        for kind in ("models", "seeds", "snapshots"):
            for model in self.items(doc, kind, shown):
                config = model.get("config") if isinstance(model.get("config"), dict) else {}
                name = self.text(config.get("alias") or model.get("name"), shown, model)
                tables += self.table(name, model, shown)
        return tables

    def table(self, name: str, spec: dict, shown: str) -> list[SourceTable]:
        line, _ = _place(spec)
        st = SourceTable(name=name, comment=self.text(spec.get("description"), shown, spec).strip(),
                         line=line, file=shown)
        for column in self.items(spec, "columns", shown):
            st.columns.append(self.column(column, st, shown))
        if not name or not st.columns:
            self.notes.append(f"skipped `{name or '?'}` ({self.relative(shown)}:{line}): no columns listed")
            return []
        pk = [c.name for c in st.columns if c.name in st.unique and not c.nullable]
        if len(pk) == 1:
            st.primary_key = (pk[0],)
        return [st]

    def column(self, column: dict, st: SourceTable, shown: str) -> SourceColumn:
        dtype = self.text(column.get("data_type"), shown, column)
        col = SourceColumn(name=self.text(column.get("name"), shown, column) or "?",
                           type=dtype.upper() or "VARCHAR", type_known=bool(dtype),
                           comment=self.text(column.get("description"), shown, column).strip())
        tests = column.get("data_tests") or column.get("tests") or []
        for test in tests if isinstance(tests, list) else []:
            self.apply_test(test, col, st, shown)
        return col

    def apply_test(self, test, col: SourceColumn, st: SourceTable, shown: str) -> None:
        name, args = (test, {}) if isinstance(test, str) else next(iter(test.items()), ("", {}))
        args = args if isinstance(args, dict) else {}
        args = args.get("arguments", args) if isinstance(args.get("arguments", args), dict) else args
        name = str(name).split(".")[-1]      # dbt_utils.unique -> unique
        if name == "not_null":
            col.nullable = False
        elif name == "unique":
            st.unique.add(col.name)
        elif name == "relationships":
            target = relation_name(self.text(args.get("to", ""), shown, test))
            st.foreign_keys.append((col.name, target, self.text(args.get("field", ""), shown, test)))
        elif name == "accepted_values" and isinstance(args.get("values"), list):
            col.values = tuple(self.text(v, shown, test) for v in args["values"])
            col.values_declared = True


def relation_name(text: str) -> str:
    """`ref('orders')` -> `orders`, `source('raw', 'payments')` -> `raw.payments`, else as is."""
    call = re.match(r"\s*(ref|source)\s*\((.*)\)\s*$", text)
    if not call:
        return text.strip()
    names = re.findall(r"['\"]([^'\"]+)['\"]", call.group(2))
    if call.group(1) == "source" and len(names) >= 2:
        return f"{names[0]}.{names[1]}"
    return names[-1] if names else text.strip()


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------ projects


def is_dbt_project_file(path: Path) -> bool:
    return path.name == "dbt_project.yml"


def _project_dir(path: Path) -> Path | None:
    for folder in [path.parent, *path.parent.parents][:6]:
        if (folder / "dbt_project.yml").is_file():
            return folder
    return None


def load_context(project_dir: Path | None) -> DbtContext:
    """Vars of dbt_project.yml (the project-scoped ones too) and the project's doc blocks."""
    ctx = DbtContext()
    if project_dir is None:
        return ctx
    shown = (project_dir / "dbt_project.yml").as_posix()
    project = load_yaml(project_dir / "dbt_project.yml", shown)
    if not isinstance(project, dict):
        raise _fail("E910", f"`{shown}` is not a dbt project file", shown,
                    help="a dbt_project.yml is a mapping with `name:` and `version:`")
    ctx.project = str(project.get("name") or "")
    ctx.seeds = seed_paths(project_dir, project)
    raw_vars = project.get("vars") if isinstance(project.get("vars"), dict) else {}
    for key, value in raw_vars.items():
        if isinstance(value, dict) and key == ctx.project:
            ctx.vars.update(value)        # vars scoped to this project
        else:
            ctx.vars[key] = value
    for md in sorted(_walk(project_dir, (".md",))):
        try:
            for name, body in DOCS_BLOCK.findall(md.read_text(encoding="utf-8")):
                ctx.docs.setdefault(name, body.strip())
        except (OSError, UnicodeDecodeError):
            continue
    return ctx


def _walk(root: Path, suffixes: tuple[str, ...]):
    for path in root.rglob("*"):
        if path.suffix.lower() in suffixes and not SKIPPED_DIRS & set(path.relative_to(root).parts[:-1]):
            if path.is_file():
                yield path


def read_dbt_yaml(path: Path) -> tuple[list[SourceTable], list[str]]:
    """One dbt property file, its Jinja rendered with its project's vars and docs."""
    shown = path.as_posix()
    reader = _Reader(load_context(_project_dir(path)), _project_dir(path))
    tables = _dedupe(reader.file(path, shown), reader.notes)
    if not tables:
        raise _fail("E904", f"`{shown}` has no dbt `sources:`, `models:`, `seeds:` or `snapshots:` "
                    "with columns to import", shown,
                    help="pass a dbt schema.yml / sources.yml file, or the dbt project directory")
    return tables, reader.notes


def read_dbt_project(path: Path, seeds: bool = True) -> tuple[list[SourceTable], list[str]]:
    """Every property file of a dbt project (a directory or its dbt_project.yml), with the
    types and data of its seed CSVs."""
    root = path if path.is_dir() else path.parent
    reader = _Reader(load_context(root), root)
    tables: list[SourceTable] = []
    for yml in sorted(_walk(root, (".yml", ".yaml"))):
        if yml.name not in PROJECT_FILES:
            tables += reader.file(yml, yml.as_posix())
    if not tables and not (seeds and reader.ctx.seeds):
        shown = (root / "dbt_project.yml").as_posix()
        raise _fail("E904", f"the dbt project `{root.as_posix()}` lists no sources, models or seeds "
                    "with columns", shown,
                    help="document columns in models/*.yml, or import target/catalog.json after `dbt docs generate`")
    tables = add_seed_evidence(_dedupe(tables, reader.notes), reader.ctx.seeds if seeds else [], reader.notes)
    return tables, reader.notes


def _dedupe(tables: list[SourceTable], notes: list[str]) -> list[SourceTable]:
    seen: dict[str, SourceTable] = {}
    for st in tables:
        if st.name in seen:
            notes.append(f"`{st.name}` is described twice ({Path(seen[st.name].file).name}:{seen[st.name].line} "
                         f"and {Path(st.file).name}:{st.line}); the first is used")
            continue
        seen[st.name] = st
    return list(seen.values())
