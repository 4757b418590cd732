"""Canonical formatting of .craft files: ``craftc fmt``.

The style of README.md and docs/language.md: one construct per line, two-space
indentation, one blank line between top-level items, blank lines kept (collapsed to
one, also around comments), values spelled as written. Inside an entity, workflow or
conversation the short keywords are padded to the width of `field` so values line up
(`doc   "..."`, `key   id`, `uses  A, B`). A settings block written on one line stays
on one line (`stage sft { epochs 3  lr 3e-4 }`, settings two spaces apart), and the
`{` of consecutive one-line blocks of the same kind lines up (`stage sft  {` over
`stage grpo {`); a block written over several lines keeps one setting per line. A
`turn` written over several lines, or longer than WRAP_AT columns on one, puts each
`or`, `solution` and `expect` on its own line, indented one step deeper.
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
    r"""The canonical form of ``text``.

    Raises:
        FormatError: the text has a syntax error (its diagnostics are attached).

    Example:
        >>> print(format_source('recipe r { seed 7  stage sft {epochs 3 lr 3e-4}\n'
        ...                     'stage grpo {\n from sft\n} }'), end="")
        recipe r {
          seed 7
          stage sft { epochs 3  lr 3e-4 }
          stage grpo {
            from sft
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
_ALIGNED_BODIES = ("entity", "workflow", "conversation")   # keywords padded to KEYWORD_WIDTH
KEYWORD_WIDTH = len("field")
WRAP_AT = 100


def _one_line(node) -> bool:
    return isinstance(node, Tree) and not node.meta.empty and node.meta.line == node.meta.end_line


def _block_of(node: Tree) -> Tree | None:
    return next((t for t in node.children if isinstance(t, Tree) and t.data == "block"), None)


def _head_of(node: Tree) -> str:
    name = next((str(t) for t in node.children if isinstance(t, Token)), None)
    return f"{node.data} {name}" if name else node.data
_PREC = {"add": 1, "sub": 1, "mul": 2, "div": 2}
_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


class _Printer:
    def __init__(self):
        self.out: list[_Line] = []
        self.blank_lines: list[int] = []     # sorted source line numbers that are blank
        self.align = False                   # inside an entity, workflow or conversation
        self.head_width: dict[int, int] = {}  # id(block node) -> width its head is padded to

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
        self.align_heads(children)
        prev_end = None
        for child in children:
            start = len(self.out)
            self.item(child, depth)
            if start < len(self.out) and prev_end is not None and \
                    self.blank_between(prev_end, _line_of(child)):
                self.out[start].blank_before = True
            prev_end = _end_line_of(child)

    def align_heads(self, children) -> None:
        """Pad the heads of consecutive one-line blocks of one kind so their `{` line up."""
        group: list[Tree] = []

        def flush():
            if len(group) > 1:
                width = max(len(_head_of(n)) for n in group)
                self.head_width.update({id(n): width for n in group})
            group.clear()

        prev_end = None
        for child in children:
            block = _block_of(child) if isinstance(child, Tree) and child.data in _BLOCK_RULES else None
            joins = block is not None and _one_line(child) and bool(block.children)
            if joins and group and (group[-1].data != child.data
                                    or self.blank_between(prev_end, _line_of(child))):
                flush()
            if joins:
                group.append(child)
            else:
                flush()
            prev_end = _end_line_of(child) if isinstance(child, Tree) else prev_end
        flush()

    def item(self, node, depth: int) -> None:
        if isinstance(node, Token):
            return
        rule = node.data
        if rule in ("schema", "entity", "recipe", "workflow", "conversation", "profile"):
            self.container(node, depth)
        elif rule in _BLOCK_RULES:
            self.named_block(node, depth)
        else:
            if rule == "turn":
                self.turn_lines(node, depth)
            else:
                self.emit(depth, self.keyword_aligned(self.line(node)), _line_of(node), _col_of(node))

    def container(self, node: Tree, depth: int) -> None:
        c = node.children
        rule = node.data
        if rule == "schema":
            head, body = f"schema {c[0]} version {c[1]}", c[2:]
        elif rule == "profile" and len(c) > 1 and isinstance(c[1], Tree) and c[1].data == "profile_base":
            head, body = f"profile {c[0]} extends {c[1].children[0]}", c[2:]
        else:
            head, body = f"{rule} {c[0]}", c[1:]
        self.emit(depth, head + " {", _line_of(node), _col_of(node))
        outer, self.align = self.align, rule in _ALIGNED_BODIES
        self.items(body, depth + 1)
        self.align = outer
        self.emit(depth, "}", _end_line_of(node), _end_col_of(node))

    def named_block(self, node: Tree, depth: int) -> None:
        head = _head_of(node).ljust(self.head_width.get(id(node), 0))
        self.block(head, _block_of(node), depth, node)

    def inline_block(self, block: Tree) -> str:
        """A block on one line: ``{ key value  key value }``."""
        parts = []
        for setting in block.children:
            key = str(setting.children[0].children[0])
            if setting.data == "nested":
                parts.append(f"{key} {self.inline_block(setting.children[1])}")
            else:
                parts.append(f"{key} " + ", ".join(self.value(v) for v in setting.children[1:]))
        return "{ " + "  ".join(parts) + " }" if parts else "{}"

    def block(self, head: str, block: Tree | None, depth: int, owner) -> None:
        src, col = _line_of(owner), _col_of(owner)
        if block is None:
            self.emit(depth, head.rstrip(), src, col)
            return
        if not block.children or _one_line(block):
            self.emit(depth, f"{head} {self.inline_block(block)}", src, col)
            return
        self.emit(depth, head.rstrip() + " {", src, col)
        shared_line = None        # settings written on one source line stay on one line
        for setting in block.children:
            key = str(setting.children[0].children[0])
            if setting.data == "nested":
                self.block(key, setting.children[1], depth + 1, setting)
                shared_line = None
                continue
            text = f"{key} " + ", ".join(self.value(v) for v in setting.children[1:])
            if shared_line is not None and shared_line == _line_of(setting) and _one_line(setting):
                self.out[-1].text += "  " + text
            else:
                self.emit(depth + 1, text, _line_of(setting), _col_of(setting))
            shared_line = _end_line_of(setting)
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
                  "solution": "solution", "uses_schema": "uses schema", "currency": "currency"}
        if rule in simple:
            return f"{simple[rule]} {c[0]}"
        if rule == "setting":
            return f"{c[0].children[0]} " + ", ".join(self.value(v) for v in c[1:])
        if rule == "key":
            return f"key {c[0]}" + "".join(f" {self.type(x)}" if x.data == "type" else self.binding(x)
                                           for x in c[1:])
        if rule == "grain":
            return "grain " + ", ".join(str(x) for x in c)
        if rule == "history":
            return f"history by {c[0]}"
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
        if rule in ("expect", "check"):
            return self.expect(node)
        if rule == "turn":
            return self.turn(node)
        return " ".join(str(x) for x in c)   # unreachable for the current grammar

    def keyword_aligned(self, text: str) -> str:
        """``doc "x"`` -> ``doc   "x"`` inside entities, workflows and conversations."""
        if not self.align:
            return text
        word, sep, rest = text.partition(" ")
        return f"{word.ljust(KEYWORD_WIDTH)} {rest}" if sep and len(word) < KEYWORD_WIDTH else text

    def turn_lines(self, node: Tree, depth: int) -> None:
        """One line, or (written over several lines, or too long) one part per line."""
        one = self.turn(node)
        if _one_line(node) and len("  " * depth + one) <= WRAP_AT:
            self.emit(depth, one, _line_of(node), _col_of(node))
            return
        asks = [t for t in node.children if isinstance(t, Token)]
        self.emit(depth, f"turn {asks[0]}", _line_of(asks[0]), _col_of(node))
        for ask in asks[1:]:
            self.emit(depth + 1, f"or {ask}", _line_of(ask), _col_of(ask))
        for x in node.children:
            if isinstance(x, Tree):
                text = f"solution {x.children[0]}" if x.data == "solution" else self.expect(x)
                self.emit(depth + 1, text, _line_of(x), _col_of(x))

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
            elif x.data == "currency":
                out += f" currency {x.children[0]}"
        return out

    def binding(self, b: Tree) -> str:
        scale = f" scale {b.children[1].children[0]}" if len(b.children) > 1 else ""
        return f" -> column {b.children[0]}{scale}"

    def type(self, t: Tree) -> str:
        name, args = t.children[0], t.children[1:]
        return f"{name}(" + ", ".join(map(str, args)) + ")" if args else str(name)

    def expect(self, node: Tree) -> str:
        """An ``expect`` or ``check`` line, one space between words."""
        kind = node.children[0]
        words = [node.data, "same_rows_as solution" if kind.type == "SAME_ROWS_AS" else str(kind)]
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
            inner = self.expr(e.children[0], 3)
            text = f"-({inner})" if inner.startswith("-") else f"-{inner}"
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
    trailing_col: dict[int, int] = {}        # output line index -> source column of its comment
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
                at_line = _owner_line(lines, starts, owner, com)
                trailing.setdefault(at_line, []).append(str(com).rstrip())
                if starts.count(lines[at_line].src) == 1:     # its source line was not split
                    trailing_col.setdefault(at_line, com.column)
                continue
        nxt = bisect.bisect_right(starts, com.line)
        leading.setdefault(nxt, []).append(
            (com.line, str(com).rstrip()))
    def blank(line: int) -> bool:
        return 1 <= line <= len(src_lines) and not src_lines[line - 1].strip()

    out: list[str] = []
    for i, ln in enumerate(lines):
        comments = leading.get(i, [])
        # Blank lines around own-line comments are kept as written (collapsed to one);
        # a top-level item keeps its blank line before its comments.
        before = (blank(comments[0][0] - 1) or ln.blank_before and ln.indent == 0) if comments \
            else ln.blank_before
        if before and out and out[-1] != "":
            out.append("")
        # A comment just before a closing brace belongs inside the block.
        indent = ln.indent + (ln.text == "}")
        for k, (line, com) in enumerate(comments):
            if k and blank(line - 1) and out[-1] != "":
                out.append("")
            out.append("  " * indent + com)
        if comments and ln.text != "}" and blank(comments[-1][0] + 1):
            out.append("")
        body = "  " * ln.indent + ln.text
        if i in trailing:
            # A comment keeps its column when the code still ends before it (aligned
            # comments stay aligned); otherwise it follows two spaces after the code.
            body = body.ljust(max(len(body) + 2, trailing_col.get(i, 0) - 1)) + "  ".join(trailing[i])
        out.append(body)
    tail = leading.get(len(lines), [])
    if tail and out:
        out.append("")
    out.extend(com for _, com in tail)
    return "\n".join(out).rstrip("\n") + "\n" if out else ""
