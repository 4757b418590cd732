"""Parsing: .craft text -> lark parse tree -> syntax tree, or syntax diagnostics.

The LALR parser is built once per process from ``grammar.lark``. Syntax errors are
turned into diagnostics (E003-E006) that say what was expected in words ("expected a
value after `epochs`", "missing `}` to close `stage sft`") instead of lark's token
sets. Nothing here raises for bad input.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import lark
from lark import Lark, Token, Tree
from lark.exceptions import (
    UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError,
)

from craftc.cache import cache_subdir, content_key
from craftc.diagnostics import Diagnostic, did_you_mean, span_at
from craftc.syntax import SourceFile
from craftc.to_syntax import ToSyntax

__all__ = ["ParseResult", "get_parser", "parse_tree", "parse_source"]


GRAMMAR = Path(__file__).with_name("grammar.lark")
_OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": False}


def _tables_cache(grammar: str) -> str | bool:
    """The file lark keeps the built tables in: in craftc's cache dir (:mod:`craftc.cache`),
    named by the grammar's text, the options and the lark and Python versions. Lark also
    stores a hash of the grammar and options inside and rebuilds (and rewrites the file)
    when it does not match or the file does not load, so a stale or corrupt file costs
    one rebuild, never a wrong parser. False (no cache) when caching is off."""
    folder = cache_subdir("lark")
    if folder is None:
        return False
    key = content_key(grammar, repr(sorted(_OPTIONS.items())), lark.__version__, sys.version)
    return str(folder / f"craft-grammar-{key[:32]}.pickle")


@lru_cache(maxsize=1)
def get_parser() -> Lark:
    """The shared LALR parser, loaded from the cached tables when they exist (building
    them takes about 40 ms, loading them a few)."""
    grammar = GRAMMAR.read_text(encoding="utf-8")
    return Lark.open(str(GRAMMAR), cache=_tables_cache(grammar), **_OPTIONS)


@dataclass
class ParseResult:
    """A parsed file: the syntax tree (None on a syntax error) and its diagnostics."""

    file: str
    text: str
    tree: Tree | None = None
    syntax: SourceFile | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def parse_tree(text: str, file: str) -> tuple[Tree | None, list[Diagnostic]]:
    """The lark tree of ``text``, or one syntax diagnostic explaining the first error."""
    try:
        return get_parser().parse(text), []
    except UnexpectedInput as err:
        return None, [syntax_diagnostic(err, text, file)]


def parse_source(text: str, file: str) -> ParseResult:
    """Parse and build the syntax tree of one file.

    Example:
        >>> r = parse_source('recipe r { seed 7 }', "r.craft")
        >>> r.syntax.recipes[0].name, r.diagnostics
        ('r', [])
    """
    result = ParseResult(file=file, text=text)
    result.tree, result.diagnostics = parse_tree(text, file)
    if result.tree is not None:
        try:
            result.syntax = ToSyntax(file).transform(result.tree)
        except VisitError as err:  # a bug in ToSyntax, reported as such, never a traceback
            result.diagnostics.append(Diagnostic(
                "E005", "error", f"internal error while reading the file: {err.orig_exc!r}",
                None, "please report this with the file that caused it"))
    return result


# ---------------------------------------------------------------- syntax errors

_TERMINAL_WORDS = {
    "NAME": "a name", "STRING": "a string", "NUMBER": "a number", "INT": "a whole number",
    "DURATION": "a duration like `10s`", "PERCENT": "a percentage like `20%`",
    "SAME_ROWS_AS": "`same_rows_as solution`", "$END": "the end of the file",
}
_VALUE_TERMINALS = {"STRING", "NUMBER", "DURATION", "PERCENT", "NAME", "ENV"}
# The blocks a recipe holds (grammar.lark, `_recipe_item`): a misspelt one is suggested.
BLOCK_NAMES = ("workflow", "conversation", "tool", "format", "teacher", "judge", "gate", "reward", "model",
               "stage", "profile", "eval")


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    for term in get_parser().terminals:
        if term.name == name:
            return f"`{term.pattern.value}`"
    return name.lower()


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    return f"`{tok}`"


def _expected_list(expected: set[str]) -> str:
    words = sorted({_describe_terminal(t) for t in expected})
    if len(words) > 6:
        return ", ".join(words[:6]) + ", ..."
    return ", ".join(words)


_OPEN_HEADER = re.compile(r"([A-Za-z_][\w ]*?)\s*$")


def _indent_at(text: str, offset: int) -> int:
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start:]
    return len(line) - len(line.lstrip(" \t"))


def _braces(text: str, upto: int):
    """The offsets of every `{` and `}` before ``upto`` outside strings and comments."""
    i, n = 0, min(upto, len(text))
    while i < n:
        ch = text[i]
        if ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch == '"':
            if text.startswith('"""', i):
                j = text.find('"""', i + 3)
                i = n if j < 0 else j + 3
                continue
            j = i + 1
            while j < n and text[j] not in '"\n':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch in "{}":
            yield i, ch
        i += 1


def _starts_line(text: str, offset: int) -> bool:
    return text[text.rfind("\n", 0, offset) + 1:offset].strip() == ""


@dataclass(frozen=True)
class BraceIssue:
    """An unbalanced brace found from indentation: a `{` whose `}` is missing, or an extra `}`."""

    kind: str          # "missing" (offset is the `{`) or "extra" (offset is the `}`)
    offset: int
    opener: int | None  # the `{` of the block concerned (for "extra": the block it would close)
    closer: int | None = None  # for "missing": the outer block's `}` that revealed it


def brace_issue(text: str, upto: int | None = None) -> BraceIssue | None:
    """The first brace that the indentation says is unbalanced, if any.

    A `}` on its own line is meant for the open block whose line is indented like it:
    when it is indented less than the innermost open block, that block lacks its `}`;
    when it is indented more, it is an extra `}` (or there is nothing left to close).

    Example:
        >>> brace_issue("recipe r {\\n  stage s {\\n    epochs 3\\n}\\n")
        BraceIssue(kind='missing', offset=21, opener=21, closer=36)
    """
    stack: list[int] = []
    for offset, ch in _braces(text, len(text) if upto is None else upto):
        if ch == "{":
            stack.append(offset)
            continue
        if not stack:
            return BraceIssue("extra", offset, None)
        if not _starts_line(text, offset) or text.count("\n", stack[-1], offset) == 0:
            stack.pop()
            continue
        indent = _indent_at(text, offset)
        if indent < _indent_at(text, stack[-1]):
            return BraceIssue("missing", stack[-1], stack[-1], offset)
        if indent > _indent_at(text, stack[-1]):
            return BraceIssue("extra", offset, stack[-1])
        stack.pop()
    return None


def _header(text: str, start: int) -> str:
    """The words before a `{` on its line, e.g. ``stage sft``."""
    line_start = text.rfind("\n", 0, start) + 1
    match = _OPEN_HEADER.search(text[line_start:start])
    return " ".join(match.group(1).split()) if match else "block"


def _unclosed_block(text: str, upto: int) -> tuple[int, str] | None:
    """The offset and header (e.g. ``stage sft``) of the `{` that most likely lacks its `}`.

    That is the first block closed by a `}` indented differently from the block's own
    line (the `}` was meant for an outer block), or else the innermost block still open.
    """
    stack: list[int] = []
    suspect: int | None = None
    for i, ch in _braces(text, upto):
        if ch == "{":
            stack.append(i)
        elif stack:
            opener = stack.pop()
            if suspect is None and _starts_line(text, i) and text.count("\n", opener, i) and \
                    _indent_at(text, i) != _indent_at(text, opener):
                suspect = opener
    if not stack:
        return None
    start = suspect if suspect is not None else stack[-1]
    return start, _header(text, start)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    if not stripped:
        return 1, 1
    line, col = _line_col(stripped, len(stripped))
    return line, col


def syntax_diagnostic(err: UnexpectedInput, text: str, file: str) -> Diagnostic:
    """One friendly diagnostic for a lark syntax error."""
    if isinstance(err, UnexpectedCharacters):
        return _bad_character(err, text, file)
    token = getattr(err, "token", None)
    at_end = isinstance(err, UnexpectedEOF) or (token is not None and token.type == "$END")
    error_at = len(text) if at_end or token is None else token.start_pos
    issue = brace_issue(text)
    if issue is not None and issue.offset <= error_at:
        return _unbalanced_brace(issue, text, file)
    if at_end:
        return _unexpected_end(err, text, file)
    return _unexpected_token(err, text, file)


def _unbalanced_brace(issue: BraceIssue, text: str, file: str) -> Diagnostic:
    """E011 at the brace the indentation shows to be unbalanced, with a note at its block."""
    line, col = _line_col(text, issue.offset)
    span = span_at(file, line, col)
    if issue.kind == "missing":
        header = _header(text, issue.offset)
        last = _last_line_of_block(text, issue.offset)
        c_line, c_col = _line_col(text, issue.closer)
        where = f"at the end of line {last}" if last == line else \
            f"on its own line after line {last}, indented like `{header}`"
        return Diagnostic(
            "E011", "error", f"missing `}}` to close `{header}`", span, f"add `}}` {where}",
            (f"`{header}` opens its block here; the `}}` at {file}:{c_line}:{c_col} is indented "
             f"like an outer block, so it is taken to close that block",))
    notes = ()
    if issue.opener is not None:
        o_line, o_col = _line_col(text, issue.opener)
        notes = (f"the innermost open block is `{_header(text, issue.opener)}` at "
                 f"{file}:{o_line}:{o_col}, indented differently",)
    return Diagnostic("E011", "error", "extra `}`", span,
                      "remove this `}`, or add the `{` it was meant to close", notes)


def _last_line_of_block(text: str, opener: int) -> int:
    """The last non-blank line indented deeper than the line of ``opener`` (1-based)."""
    lines = text.splitlines()
    first, _ = _line_col(text, opener)
    indent = _indent_at(text, opener)
    last = first
    for number in range(first + 1, len(lines) + 1):
        stripped = lines[number - 1].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(lines[number - 1]) - len(lines[number - 1].lstrip(" \t")) <= indent:
            break
        last = number
    return last


def _bad_character(err: UnexpectedCharacters, text: str, file: str) -> Diagnostic:
    span = span_at(file, err.line, err.column)
    if err.char == '"':
        return Diagnostic("E004", "error", "unterminated string", span,
                          'close the string with `"` on the same line, or use """...""" '
                          "for text over several lines")
    char = err.char
    shown = repr(char)[1:-1] if not char.isprintable() else char
    help_text = "remove it"
    if char == ";":
        help_text = "settings end at the end of the value; remove the `;`"
    elif char == ":":
        help_text = "write `key value` without a colon"
    elif char in "[]":
        help_text = "lists are written `a, b, c` without brackets"
    elif char == "'":
        help_text = 'strings use double quotes: "..."'
    return Diagnostic("E003", "error", f"unexpected character `{shown}`", span, help_text)


def _unexpected_end(err: UnexpectedInput, text: str, file: str) -> Diagnostic:
    opened = _unclosed_block(text, len(text))
    line, col = _end_position(text)
    if opened is not None:
        offset, header = opened
        o_line, o_col = _line_col(text, offset)
        return Diagnostic(
            "E006", "error", f"missing `}}` to close `{header}`", span_at(file, line, col),
            f"add `}}` after the last setting of `{header}`",
            (f"`{header}` opens its block at {file}:{o_line}:{o_col}",))
    expected = _expected_list(set(getattr(err, "expected", ()) or ()))
    return Diagnostic("E006", "error", "unexpected end of file", span_at(file, line, col),
                      f"expected {expected}" if expected else "the file ends too early")


def _value_example(name: str) -> str:
    """How a setting written without its value is written, per its type in each block that knows it."""
    # Imported here: the IR behind the key tables is not needed to parse a file that parses.
    from craftc.setting_keys import BLOCK_KEYS

    examples: dict[str, list[str]] = {}
    for kind, keys in BLOCK_KEYS.items():
        if name in keys:
            examples.setdefault(keys[name].example(name), []).append(f"`{kind}`")
    if not examples:
        return "write a value"
    if len(examples) == 1:
        return f"write a value, e.g. `{next(iter(examples))}`"
    return "write a value, e.g. " + " or ".join(f"`{ex}` in {', '.join(kinds)}" for ex, kinds in examples.items())


def _unexpected_token(err: UnexpectedToken, text: str, file: str) -> Diagnostic:
    tok = err.token
    span = span_at(file, tok.line, tok.column, len(str(tok)))
    expected = set(err.expected or ())
    history = list(getattr(err, "token_history", None) or [])
    previous = history[-1] if history else None
    if expected == {"STRING"} and previous is not None:
        return Diagnostic("E005", "error", f"expected a string after `{previous}`", span,
                          f'write `{previous} "..."`')
    if tok.type == "RPAR" and previous is not None and str(previous) == "(" and \
            text[:previous.start_pos].rstrip().endswith("one_of"):
        start = text[:previous.start_pos].rstrip()
        line, col = _line_col(text, len(start) - len("one_of"))
        return Diagnostic("E005", "error", "`one_of()` lists no values", span_at(file, line, col, 8),
                          'list the values to draw from: `one_of(7, 14, 30)` or `one_of("search", "display")`')
    if tok.type == "LBRACE" and previous is not None and previous.type == "NAME":
        word = str(previous).lower()
        guess = did_you_mean(word, BLOCK_NAMES) or next(
            (b for b in BLOCK_NAMES if word.startswith(b) or (len(word) >= 3 and b.startswith(word))), None)
        where = span_at(file, previous.line, previous.column, len(str(previous)))
        return Diagnostic("E005", "error", f"unknown block `{previous}`", where,
                          f"did you mean `{guess} {{ ... }}`?" if guess else
                          f"a recipe's blocks are {', '.join(f'`{b}`' for b in BLOCK_NAMES)}; "
                          f"a setting is written `{previous} VALUE`")
    if expected and expected <= (_VALUE_TERMINALS | {"LBRACE"}) and previous is not None:
        return Diagnostic("E005", "error", f"expected a value after `{previous}`", span,
                          f"{_value_example(str(previous))}, or remove `{previous}`")
    if tok.type == "RBRACE" and "RBRACE" not in expected:
        return Diagnostic("E005", "error", "unexpected `}`", span,
                          f"expected {_expected_list(expected)} before `}}`; "
                          "or remove an extra `}`")
    if tok.type == "LBRACE" and previous is not None:
        return Diagnostic("E005", "error", f"unexpected `{{` after `{previous}`", span,
                          f"expected {_expected_list(expected)}")
    return Diagnostic("E005", "error", f"unexpected {_describe_token(tok)}", span,
                      f"expected {_expected_list(expected)}")
