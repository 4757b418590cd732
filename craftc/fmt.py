"""Canonical formatting of .craft files: ``craftc fmt``.

One construct per line, two-space indentation, one blank line between top-level
items, blank lines inside blocks kept (collapsed to one), values spelled as written.
Comments are kept: the lexer hands every ``#`` comment to a callback, and each is put
back next to the line it was on (trailing comments) or before the item that follows
it (comments on their own line). Formatting is idempotent: formatting formatted text
changes nothing. A file with syntax errors is not formatted; its diagnostics are
returned instead.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from craftc.diagnostics import Diagnostic, DiagnosticSink, render_diagnostics
from craftc.parser import syntax_diagnostic

__all__ = ["format_source", "format_file", "FormatResult", "FormatError"]

_comments: list[Token] = []


@lru_cache(maxsize=1)
def _fmt_parser() -> Lark:
    """A parser of the same grammar whose lexer reports comments to ``_comments``."""
    return Lark.open("grammar.lark", rel_to=__file__, parser="lalr", propagate_positions=True,
                     maybe_placeholders=False, lexer_callbacks={"COMMENT": _comments.append},
                     cache=True)


class FormatError(ValueError):
    """Raised by :func:`format_source` for text with syntax errors; carries diagnostics."""

    def __init__(self, diagnostics: list[Diagnostic], text: str, file: str):
        self.diagnostics = diagnostics
        super().__init__(render_diagnostics(diagnostics, {file: text}).rstrip())


@dataclass
class FormatResult:
    """Formatted text (None when the file has errors) and the diagnostics."""

    text: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    changed: bool = False


def format_source(text: str, file: str = "<input>") -> str:
    """The canonical form of ``text``.

    Raises:
        FormatError: the text has a syntax error (its diagnostics are attached).

    Example:
        >>> print(format_source('recipe r { seed 7  stage sft { epochs 3  lr 3e-4 } }'), end="")
        recipe r {
          seed 7
          stage sft {
            epochs 3
            lr 3e-4
          }
        }
    """
    _comments.clear()
    try:
        tree = _fmt_parser().parse(text)
    except UnexpectedInput as err:
        raise FormatError([syntax_diagnostic(err, text, file)], text, file) from None
    comments = list(_comments)
    _comments.clear()
    printer = _Printer()
    printer.blank_lines = [i + 1 for i, ln in enumerate(text.splitlines()) if not ln.strip()]
    lines = printer.print_start(tree)
    return _weave(lines, comments, text)


def format_file(path: str | os.PathLike) -> FormatResult:
    """Format one file in memory (the caller writes it back, atomically)."""
    from craftc.frontend import read_source

    path = Path(path)
    sink = DiagnosticSink()
    text = read_source(path, path.as_posix(), sink)
    if text is None:
        return FormatResult(None, sink.items)
    try:
        formatted = format_source(text, path.as_posix())
    except FormatError as err:
        return FormatResult(None, err.diagnostics)
    return FormatResult(formatted, [], formatted != text)


# ---------------------------------------------------------------- printing


@dataclass
class _Line:
    indent: int
    text: str
    src: int          # source line the output line stands for
    col: int = 0      # source column it starts at (to place trailing comments)
    blank_before: bool = False


def _line_of(node) -> int:
    if isinstance(node, Token):
        return node.line
    return node.meta.line if not node.meta.empty else 0


def _col_of(node) -> int:
    if isinstance(node, Token):
        return node.column
    return node.meta.column if not node.meta.empty else 0


def _end_col_of(node) -> int:
    if isinstance(node, Token):
        return node.end_column
    return node.meta.end_column - 1 if not node.meta.empty else 0


def _end_line_of(node) -> int:
    if isinstance(node, Token):
        return node.end_line
    return node.meta.end_line if not node.meta.empty else 0


_BLOCK_RULES = ("tool", "format", "teacher", "judge", "gate", "reward", "model", "stage", "eval")
_PREC = {"add": 1, "sub": 1, "mul": 2, "div": 2}
_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


class _Printer:
    def __init__(self):
        self.out: list[_Line] = []
        self.blank_lines: list[int] = []     # sorted source line numbers that are blank

    def blank_between(self, after: int, before: int) -> bool:
        i = bisect.bisect_right(self.blank_lines, after)
        return i < len(self.blank_lines) and self.blank_lines[i] < before

    def emit(self, depth: int, text: str, src: int, col: int = 0) -> None:
        self.out.append(_Line(depth, text, src, col))

    def print_start(self, tree: Tree) -> list[_Line]:
        for i, item in enumerate(tree.children):
            start = len(self.out)
            self.item(item, 0)
            if i and start < len(self.out):
                self.out[start].blank_before = True
        return self.out

    def items(self, children, depth: int) -> None:
        prev_end = None
        for child in children:
            start = len(self.out)
            self.item(child, depth)
            if start < len(self.out) and prev_end is not None and \
                    self.blank_between(prev_end, _line_of(child)):
                self.out[start].blank_before = True
            prev_end = _end_line_of(child)

    def item(self, node, depth: int) -> None:
        if isinstance(node, Token):
            return
        rule = node.data
        if rule in ("schema", "entity", "recipe", "workflow", "conversation", "profile"):
            self.container(node, depth)
        elif rule in _BLOCK_RULES:
            self.named_block(node, depth)
        else:
            self.emit(depth, self.line(node), _line_of(node), _col_of(node))

    def container(self, node: Tree, depth: int) -> None:
        c = node.children
        rule = node.data
        if rule == "schema":
            head, body = f"schema {c[0]} version {c[1]}", c[2:]
        else:
            head, body = f"{rule} {c[0]}", c[1:]
        self.emit(depth, head + " {", _line_of(node), _col_of(node))
        self.items(body, depth + 1)
        self.emit(depth, "}", _end_line_of(node), _end_col_of(node))

    def named_block(self, node: Tree, depth: int) -> None:
        name = next((str(t) for t in node.children if isinstance(t, Token)), None)
        block = next((t for t in node.children if isinstance(t, Tree)), None)
        head = f"{node.data} {name}" if name else node.data
        self.block(head, block, depth, node)

    def block(self, head: str, block: Tree | None, depth: int, owner) -> None:
        src, col = _line_of(owner), _col_of(owner)
        if block is None:
            self.emit(depth, head, src, col)
            return
        if not block.children:
            self.emit(depth, head + " {}", src, col)
            return
        self.emit(depth, head + " {", src, col)
        for setting in block.children:
            key = str(setting.children[0].children[0])
            if setting.data == "nested":
                self.block(key, setting.children[1], depth + 1, setting)
            else:
                values = ", ".join(self.value(v) for v in setting.children[1:])
                self.emit(depth + 1, f"{key} {values}", _line_of(setting), _col_of(setting))
        self.emit(depth, "}", _end_line_of(block), _end_col_of(block))

    # ------------------------------------------------------------ one-line constructs

    def value(self, v) -> str:
        if isinstance(v, Token):
            return str(v)
        if v.data == "env":
            return f"env({v.children[0]})"
        if v.data == "qualified":
            return f"{self.value(v.children[0])} {v.children[1]}"
        return str(v.children[0])

    def line(self, node: Tree) -> str:
        c, rule = node.children, node.data
        simple = {"doc": "doc", "deprecated": "deprecated", "table": "table", "ask": "ask",
                  "solution": "solution", "uses_schema": "uses schema"}
        if rule in simple:
            return f"{simple[rule]} {c[0]}"
        if rule == "setting":
            return f"{c[0].children[0]} " + ", ".join(self.value(v) for v in c[1:])
        if rule == "key":
            return f"key {c[0]}" + "".join(self.binding(x) for x in c[1:])
        if rule == "ref":
            return f"ref {c[0]} -> {c[1]}" + self.tail(c[2:])
        if rule == "field":
            return f"field {c[0]} {self.type(c[1])}" + self.tail(c[2:])
        if rule == "metric":
            doc = f" {c[1]}" if len(c) == 3 else ""
            return f"metric {c[0]}{doc} = {self.expr(c[-1])}"
        if rule == "param_range":
            return f"param {c[0]} in {c[1]}..{c[2]}"
        if rule == "param_column":
            return f"param {c[0]} from {c[1].children[0]}.{c[1].children[1]}"
        if rule == "param_choice":
            return f"param {c[0]} one_of(" + ", ".join(self.value(v) for v in c[1:]) + ")"
        if rule == "uses":
            return "uses " + ", ".join(
                f"metric {u.children[0]}" if u.data == "use_metric" else str(u.children[0])
                for u in c)
        if rule == "expect":
            return self.expect(node)
        if rule == "turn":
            return self.turn(node)
        return " ".join(str(x) for x in c)   # unreachable for the current grammar

    def tail(self, parts) -> str:
        out = ""
        for x in parts:
            if isinstance(x, Token):
                out += f" {x}"
            elif x.data == "binding":
                out += self.binding(x)
            elif x.data == "nullable":
                out += " nullable"
            elif x.data == "deprecated":
                out += f" deprecated {x.children[0]}"
        return out

    def binding(self, b: Tree) -> str:
        scale = f" scale {b.children[1].children[0]}" if len(b.children) > 1 else ""
        return f" -> column {b.children[0]}{scale}"

    def type(self, t: Tree) -> str:
        name, args = t.children[0], t.children[1:]
        return f"{name}(" + ", ".join(map(str, args)) + ")" if args else str(name)

    def expect(self, node: Tree) -> str:
        kind = node.children[0]
        words = ["expect", "same_rows_as solution" if kind.type == "SAME_ROWS_AS" else str(kind)]
        for a in node.children[1:]:
            if a.data == "name_list":
                words.append("(" + ", ".join(map(str, a.children)) + ")")
            else:
                words.append(str(a.children[0]))
        return " ".join(words)

    def turn(self, node: Tree) -> str:
        asks = [str(t) for t in node.children if isinstance(t, Token)]
        rest = [x for x in node.children if isinstance(x, Tree)]
        text = "turn " + " or ".join(asks)
        for x in rest:
            text += f" solution {x.children[0]}" if x.data == "solution" else f" {self.expect(x)}"
        return text

    def expr(self, e, level: int = 0) -> str:
        if isinstance(e, Token):
            return str(e)
        if e.data == "number":
            text = str(e.children[0])
        elif e.data == "column_ref":
            d = e.children[0]
            text = f"{d.children[0]}.{d.children[1]}"
        elif e.data == "call":
            text = f"{e.children[0]}({self.expr(e.children[1])})"
        elif e.data == "neg":
            text = f"-{self.expr(e.children[0], 3)}"
        else:
            p = _PREC[e.data]
            right_level = p + (e.data in ("sub", "div"))
            text = f"{self.expr(e.children[0], p)} {_SYM[e.data]} {self.expr(e.children[1], right_level)}"
            if p < level:
                text = f"({text})"
        return text


def _owner_line(lines: list[_Line], starts: list[int], src: int, com: Token) -> int:
    """The output line a trailing comment follows: the last one that began before it."""
    first = bisect.bisect_left(starts, src)
    last = bisect.bisect_right(starts, src)
    if first == last:               # the comment's line holds no line start: the one before
        return max(first - 1, 0)
    before = [i for i in range(first, last) if (lines[i].col or 0) < com.column]
    return before[-1] if before else first


def _weave(lines: list[_Line], comments: list[Token], text: str) -> str:
    """Output lines with the comments put back and blank lines restored."""
    trailing: dict[int, list[str]] = {}      # output line index -> comments
    leading: dict[int, list[tuple[int, str]]] = {}
    src_lines = text.splitlines()
    code_lines = {ln.src for ln in lines}
    targets = sorted(code_lines)
    starts = [ln.src for ln in lines]          # non-decreasing: lines follow the source
    for com in comments:
        before = src_lines[com.line - 1][: com.column - 1] if com.line <= len(src_lines) else ""
        if before.strip():
            at = bisect.bisect_right(targets, com.line)
            owner = com.line if com.line in code_lines else (targets[at - 1] if at else None)
            if owner is not None:
                trailing.setdefault(_owner_line(lines, starts, owner, com), []).append(
                    str(com).rstrip())
                continue
        nxt = bisect.bisect_right(starts, com.line)
        leading.setdefault(nxt, []).append(
            (com.line, str(com).rstrip()))
    out: list[str] = []
    for i, ln in enumerate(lines):
        if ln.blank_before and out:
            out.append("")
        # A comment just before a closing brace belongs inside the block.
        indent = ln.indent + (ln.text == "}")
        for _, com in leading.get(i, []):
            out.append("  " * indent + com)
        body = "  " * ln.indent + ln.text
        if i in trailing:
            body += "  " + "  ".join(trailing[i])
        out.append(body)
    tail = leading.get(len(lines), [])
    if tail and out:
        out.append("")
    out.extend(com for _, com in tail)
    return "\n".join(out).rstrip("\n") + "\n" if out else ""
