"""craftc and runtime import cleanly: each module on its own, and with no import cycle.

A cycle between modules works or fails depending on which module a program happens
to import first: ``import craftc.lower`` on its own once failed with a circular
ImportError while ``craftc compile``, which imported craftc.check first, worked. So
every module is imported first, in an interpreter where no other module of the
project is loaded yet, and the module-level import graph (the ``import`` and ``from``
statements a module runs when it is imported, relative ones resolved, with the
packages they load) is checked for cycles by reading the source with ``ast``.

Imports inside functions are not in that graph; the cycles they close are listed in
KNOWN_FUNCTION_IMPORT_CYCLES below, which may only shrink.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import deque
from pathlib import Path

from compiler_support import ROOT

PACKAGES = ("craftc", "runtime")

# Cycles closed only by imports inside functions (each a strongly connected set of
# modules). They do not break an import, but they hide a dependency: when one is
# untangled, delete its entry here (the test fails until you do).
KNOWN_FUNCTION_IMPORT_CYCLES = {
    # dbt_seeds reads seed CSVs with sources' DuckDB reader; sources dispatches to the dbt readers.
    frozenset({"craftc.importer.dbt_artifacts", "craftc.importer.dbt_seeds", "craftc.importer.dbt_yaml",
               "craftc.importer.sources"}),
    # checks normalises frames with expectations' helpers; expectations judges with checks.
    frozenset({"runtime.workflows.checks", "runtime.workflows.expectations"}),
}

# Imports each module in a fresh state of the project: before each one, every craftc and
# runtime module is dropped from sys.modules (third-party modules stay, they cannot close
# a cycle of ours). Prints one JSON line per module: its name and the error, if any.
_IMPORTER = """
import importlib, json, sys, traceback
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.split(".")[0] in ("craftc", "runtime")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
        error, missing = None, None
    except BaseException as exc:
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    print(json.dumps({"module": name, "error": error, "missing": missing}), flush=True)
"""


def project_modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (source file, is a package)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _statements(body: list[ast.stmt], inside_functions: bool):
    """The import statements a module runs on import (with ``inside_functions``, also those
    in its functions and classes); never those under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                yield from _statements(node.body + node.orelse, inside_functions)
        elif isinstance(node, (ast.Try, ast.With)):
            handlers = [s for h in getattr(node, "handlers", []) for s in h.body]
            yield from _statements(node.body + handlers + getattr(node, "orelse", [])
                                   + getattr(node, "finalbody", []), inside_functions)
        elif inside_functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _statements(node.body, inside_functions)
        elif inside_functions:
            yield from _statements([n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)],
                                   inside_functions)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    # `from pkg import sub` imports the module pkg.sub; `from pkg import name` only pkg.
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


def import_graph(inside_functions: bool = False) -> dict[str, set[str]]:
    """Module -> the project modules importing it loads (their packages included, except
    the module's own packages, which are always loaded before it)."""
    modules = project_modules()
    graph = {}
    for module, (path, is_package) in modules.items():
        own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        edges = set()
        for node in _statements(ast.parse(path.read_text(encoding="utf-8")).body, inside_functions):
            for target in _targets(node, module, is_package, modules):
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    loaded = ".".join(parts[:i])
                    if loaded in modules and loaded != module and loaded not in own:
                        edges.add(loaded)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def shortest_cycle(graph: dict[str, set[str]], component: set[str]) -> str:
    """One cycle through the component's first module, as `a -> b -> a`."""
    start = min(component)
    came_from = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v] & component):
            if w == start:
                path = [v]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return " -> ".join([*reversed(path), start])
            if w not in came_from:
                came_from[w] = v
                queue.append(w)
    return start


def test_no_module_level_import_cycle():
    graph = import_graph()
    found = [shortest_cycle(graph, c) for c in cycles(graph)]
    assert not found, "module-level import cycles (move what both sides need to the module that owns it):\n" \
        + "\n".join(found)


def test_imports_inside_functions_close_no_new_cycle():
    graph = import_graph(inside_functions=True)
    found = {frozenset(c): shortest_cycle(graph, c) for c in cycles(graph)}
    new = [text for c, text in found.items() if c not in KNOWN_FUNCTION_IMPORT_CYCLES]
    gone = [sorted(c) for c in KNOWN_FUNCTION_IMPORT_CYCLES if c not in found]
    assert not new, "new cycles through imports inside functions:\n" + "\n".join(new)
    assert not gone, f"untangled, so delete from KNOWN_FUNCTION_IMPORT_CYCLES: {gone}"


def test_the_graph_sees_relative_imports_and_packages():
    graph = import_graph()
    assert "craftc.ir" in graph["craftc.lower"]
    assert {"craftc.check", "craftc.check.names"} <= graph["craftc.frontend"]
    assert "craftc.parser" not in graph["craftc.frontend"]      # imported inside a function
    assert graph["craftc.emit"] == set()


def test_every_module_imports_on_its_own():
    names = sorted(project_modules())
    batches = [names[0::2], names[1::2]]          # two interpreters side by side
    workers = [subprocess.Popen([sys.executable, "-c", _IMPORTER, *batch], cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for batch in batches]
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        results += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert worker.returncode == 0, err[-2000:]
    assert sorted(r["module"] for r in results) == names
    # A module that needs a package this environment lacks (verl has its own venv) is
    # skipped; any other failure is confirmed in a brand-new interpreter before it counts.
    failed = [r for r in results if r["error"] and (r["missing"] or "").split(".")[0] in ("", *PACKAGES)]
    confirmed = []
    for r in failed:
        alone = subprocess.run([sys.executable, "-c", f"import {r['module']}"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120)
        if alone.returncode != 0:
            confirmed.append(f"{r['module']}: {alone.stderr.strip().splitlines()[-1]}")
    assert not confirmed, "modules that fail to import on their own:\n" + "\n".join(confirmed)
