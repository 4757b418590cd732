"""Which columns a reference solution reads from the frames ``api.table`` and ``api.query`` return.

A solution reads a view's columns in two more ways than through SQL: the ``columns``
argument of ``api.table("view", ["a", "b"])``, and a column subscript of the frame it
returns (``df["nope"]``). A frame's columns are known when it comes straight from
``api.table`` (the listed columns, or all of the view's) or from an ``api.query``
whose SELECT names every column, possibly through a column-keeping method such as
``.head(n)``. The tracking is deliberately narrow so that a finding is a real miss:
only names assigned at the top level of the solution are followed, a column assigned
with ``df["new"] = ...`` becomes known, and any other rebinding or in-place change
forgets the frame.

Example:
    >>> from craftc.check.solution_sql import parse_solution
    >>> tree = parse_solution('df = api.table("campaign", ["id"])\\nresult = df["name"]\\n')
    >>> [(r.view, r.column, r.line) for r in frame_reads(tree, {"campaign": {"id", "name"}})]
    [('campaign', 'id', 1), ('campaign', 'name', 2)]
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["Frame", "FrameMiss", "frame_reads", "frame_misses"]

# Methods whose result has the same columns as the frame they are called on.
_KEEPS_COLUMNS = frozenset({"head", "tail", "sort_values", "copy", "dropna", "drop_duplicates",
                            "fillna", "nlargest", "nsmallest", "sample", "query", "round"})
# In-place changes that may remove or rename columns: the frame is forgotten.
_MUTATES = frozenset({"pop", "insert", "set_axis", "rename", "drop", "reset_index", "set_index"})


@dataclass(frozen=True)
class Frame:
    """A frame whose columns are known: from ``api.table`` (``view`` set) or ``api.query``."""

    view: str | None
    columns: frozenset[str]
    origin: str          # "api.table(\"campaign\")" or "api.query"
    line: int


@dataclass(frozen=True)
class FrameMiss:
    """A subscript of a query frame that names a column its SELECT does not return."""

    frame: str
    column: str
    line: int
    col: int
    origin: str
    columns: tuple[str, ...]


def _api_call(node: ast.AST, method: str) -> ast.Call | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == method and isinstance(node.func.value, ast.Name) \
            and node.func.value.id == "api" and node.args:
        return node
    return None


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _string_list(node: ast.AST | None) -> list[ast.Constant] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(_string(e) is not None for e in node.elts):
        return list(node.elts)
    return None


def _table_columns_arg(call: ast.Call) -> ast.AST | None:
    if len(call.args) > 1:
        return call.args[1]
    return next((k.value for k in call.keywords if k.arg == "columns"), None)


class _FrameTracker(ast.NodeVisitor):
    def __init__(self, views: dict[str, set[str]], constants: dict[str, str]):
        self.views, self.constants = views, constants
        self.frames: dict[str, Frame] = {}
        self.reads: list = []
        self.misses: list[FrameMiss] = []
        self.depth = 0              # > 0 inside if/for/while/try/with: bindings there are forgotten

    # ---------------------------------------------------------- what a value is

    def frame_of(self, node: ast.AST, reading: bool = False) -> Frame | None:
        """The known columns of what ``node`` evaluates to (``reading``: also a groupby or a
        tracked name, whose subscripts read the frame's columns)."""
        if reading and isinstance(node, ast.Name):
            return self.frames.get(node.id)
        table = _api_call(node, "table")
        if table is not None:
            view = _string(table.args[0])
            if view not in self.views:
                return None
            listed = _string_list(_table_columns_arg(table))
            cols = {c.value for c in listed} if listed is not None else set(self.views[view])
            return Frame(view, frozenset(cols), f'api.table("{view}")', node.lineno)
        query = _api_call(node, "query")
        if query is not None:
            sql = _string(query.args[0])
            if sql is None and isinstance(query.args[0], ast.Name):
                sql = self.constants.get(query.args[0].id)
            cols = _select_columns(sql) if sql else None
            return Frame(None, frozenset(cols), "api.query", node.lineno) if cols else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in _KEEPS_COLUMNS or reading and node.func.attr == "groupby"):
            return self.frame_of(node.func.value, reading=True)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            frame = self.frames.get(node.value.id)
            if frame is None:
                return None
            listed = _string_list(node.slice)
            if listed is not None:
                return Frame(frame.view, frozenset(c.value for c in listed) & frame.columns,
                             frame.origin, frame.line)
            if isinstance(node.slice, (ast.Compare, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Call)):
                return frame        # a row filter keeps the columns
        return None

    # ---------------------------------------------------------- bindings

    def store(self, target: ast.AST, frame: Frame | None) -> None:
        if isinstance(target, ast.Name):
            if frame is not None and self.depth == 0:
                self.frames[target.id] = frame
            else:
                self.frames.pop(target.id, None)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and target.value.id in self.frames:
            new = _string(target.slice)
            old = self.frames[target.value.id]
            if new is None:
                self.frames.pop(target.value.id)
            else:
                self.frames[target.value.id] = Frame(old.view, old.columns | {new}, old.origin, old.line)
            self.visit(target.slice)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.store(element, None)
        elif isinstance(target, ast.Starred):
            self.store(target.value, None)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            self.frames.pop(target.value.id, None)     # df.columns = [...]
        else:
            self.visit(target)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        frame = self.frame_of(node.value)
        for target in node.targets:
            self.store(target, frame)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.store(node.target, self.frame_of(node.value) if node.value is not None else None)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Subscript):
            self.visit(node.target)     # df["x"] += 1 reads df["x"]
        else:
            self.store(node.target, None)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.store(node.target, None)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            name = target.value if isinstance(target, ast.Subscript) else target
            if isinstance(name, ast.Name):
                self.frames.pop(name.id, None)

    def _nested(self, node: ast.AST) -> None:
        for target in _bound_names(node):
            self.frames.pop(target, None)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_If = visit_For = visit_AsyncFor = visit_While = visit_Try = visit_With = _nested

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.frames.pop(getattr(node, "name", ""), None)   # a function body is not followed

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        return None

    # ---------------------------------------------------------- reads

    def visit_Call(self, node: ast.Call) -> None:
        table = _api_call(node, "table")
        if table is not None and _string(table.args[0]) in self.views:
            view = _string(table.args[0])
            for const in _string_list(_table_columns_arg(table)) or ():
                self.reads.append((view, const.value, const.lineno, const.col_offset + 2))
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in self.frames and (
                    func.attr in _MUTATES and any(k.arg == "inplace" for k in node.keywords)
                    or func.attr in {"pop", "insert", "set_axis"}):
            self.frames.pop(func.value.id)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        frame = self.frame_of(node.value, reading=True)
        if frame is not None:
            single = [node.slice] if _string(node.slice) is not None else []
            for const in single or _string_list(node.slice) or ():
                if const.value not in frame.columns:
                    self._miss(_frame_name(node.value), frame, const)
        self.generic_visit(node)

    def _miss(self, name: str, frame: Frame, const: ast.Constant) -> None:
        if frame.view is not None:
            self.reads.append((frame.view, const.value, const.lineno, const.col_offset + 2))
        else:
            self.misses.append(FrameMiss(name, const.value, const.lineno, const.col_offset + 2,
                                         f"{frame.origin} at line {frame.line}", tuple(sorted(frame.columns))))


def _frame_name(node: ast.AST) -> str:
    while not isinstance(node, ast.Name):
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return "the frame"
    return node.id


def _bound_names(node: ast.AST) -> set[str]:
    """Names a compound statement (re)binds anywhere inside it."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
    return names


def _select_columns(sql: str) -> set[str] | None:
    """The output columns of a query when its SELECT names every one (no ``*``), else None."""
    from sqlglot import exp

    from craftc.sql_facts import parse_sql

    tree = parse_sql(sql)
    if not isinstance(tree, exp.Query):
        return None
    selects = tree.selects
    names = tree.named_selects
    if not selects or any(s.is_star for s in selects) or len(names) != len(selects) \
            or not all(names):
        return None
    return set(names)


def _track(tree: ast.Module | None, views: dict[str, set[str]]) -> _FrameTracker:
    constants = {}
    if tree is not None:
        for node in tree.body:
            if isinstance(node, ast.Assign) and _string(node.value) is not None:
                constants.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    tracker = _FrameTracker(views, constants)
    if tree is not None:
        tracker.visit(tree)
    return tracker


def frame_reads(tree: ast.Module | None, views: dict[str, set[str]]) -> list:
    """View columns read through ``api.table`` columns and subscripts of its frames."""
    from craftc.check.solution_sql import Read

    return [Read(*read) for read in _track(tree, views).reads]


def frame_misses(tree: ast.Module | None, views: dict[str, set[str]]) -> list[FrameMiss]:
    """Subscripts of ``api.query`` frames naming a column the query does not return."""
    return _track(tree, views).misses
