"""Editor support generated from the language itself: the TextMate grammar for `.craft`.

The keywords come from ``grammar.lark`` (every word-shaped string terminal, listed by
lark) and the setting keys from :data:`craftc.settings.BLOCK_KEYS`, so the
highlighting cannot drift from the compiler. A keyword added to the grammar must be
given a scope class below; until it is, generation fails and names the word.

Run ``python -m craftc.editor`` from the repository root to rewrite the committed
files, ``python -m craftc.editor --check`` to verify them (exit 1 when stale).

Example:
    >>> grammar = textmate_grammar()
    >>> grammar["scopeName"]
    'source.craft'
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

from lark import Lark
from lark.lexer import PatternStr

from craftc.settings import BLOCK_KEYS

__all__ = ["grammar_keywords", "setting_keys", "textmate_grammar", "language_configuration",
           "generated_files", "main"]

SCOPE = "source.craft"

# Every keyword of grammar.lark, by what it does in a file. A keyword missing here
# (or listed here but gone from the grammar) stops generation with its name.
DECLARATIONS = ("schema", "recipe", "entity", "metric", "workflow", "conversation", "tool", "format",
                "teacher", "judge", "gate", "reward", "model", "stage", "profile", "eval")
MEMBERS = ("version", "doc", "deprecated", "currency", "table", "key", "grain", "history", "ref", "field",
           "nullable", "column", "scale", "uses", "ask", "param", "solution", "expect", "check", "turn")
OPERATOR_WORDS = ("in", "from", "one_of", "or", "by", "extends")
FUNCTIONS = ("env",)
# Declarations whose next word is the name being declared (`entity Campaign`).
NAMED_DECLARATIONS = ("schema", "recipe", "entity", "metric", "workflow", "conversation", "tool", "teacher",
                      "judge", "gate", "model", "stage", "profile")

_WORD = re.compile(r"^[a-z_]+$")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


@lru_cache(maxsize=1)
def grammar_keywords() -> tuple[str, ...]:
    """The keywords of ``grammar.lark``, sorted: its word-shaped string terminals."""
    lark = Lark.open("grammar.lark", rel_to=__file__, parser="lalr", lexer="basic")
    words = {t.pattern.value for t in lark.terminals if isinstance(t.pattern, PatternStr)
             and _WORD.match(t.pattern.value)}
    return tuple(sorted(words))


def setting_keys() -> tuple[str, ...]:
    """Every settings key of every block kind that is not also a keyword, sorted."""
    keys = {key for block in BLOCK_KEYS.values() for key in block}
    return tuple(sorted(keys - set(grammar_keywords())))


def _classified_keywords() -> dict[str, tuple[str, ...]]:
    classes = {"keyword.declaration.craft": DECLARATIONS, "keyword.other.craft": MEMBERS,
               "keyword.operator.word.craft": OPERATOR_WORDS, "keyword.other.function.craft": FUNCTIONS}
    listed = [word for words in classes.values() for word in words]
    known = set(grammar_keywords())
    unclassified = sorted(known - set(listed))
    stale = sorted(set(listed) - known)
    if unclassified or stale or len(listed) != len(set(listed)):
        raise ValueError(f"craftc/editor.py is out of step with grammar.lark: keywords to classify "
                         f"{unclassified}, words no longer keywords {stale}")
    return classes


def _words(words) -> str:
    # Longest first so that `one_of` is tried before `of`-like prefixes; \b on both sides.
    return r"\b(?:" + "|".join(sorted(words, key=lambda w: (-len(w), w))) + r")\b"


def _not_keyword() -> str:
    return r"(?!" + _words(grammar_keywords()) + ")"


def _patterns() -> dict[str, dict]:
    keyword_classes = _classified_keywords()
    name = _not_keyword() + f"({_IDENT})"
    repository = {
        "comment": {"name": "comment.line.number-sign.craft", "match": r"(#).*$",
                    "captures": {"1": {"name": "punctuation.definition.comment.craft"}}},
        "string-triple": {
            "name": "string.quoted.triple.craft", "begin": '"""', "end": '"""',
            "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.craft"}},
            "endCaptures": {"0": {"name": "punctuation.definition.string.end.craft"}},
            "patterns": [{"include": "#placeholder"}]},
        "string-double": {
            "name": "string.quoted.double.craft", "begin": '"', "end": r'(")|((?:[^\\\n])$)',
            "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.craft"}},
            "endCaptures": {"1": {"name": "punctuation.definition.string.end.craft"},
                            "2": {"name": "invalid.illegal.newline.craft"}},
            "patterns": [{"name": "constant.character.escape.craft", "match": r"\\."},
                         {"include": "#placeholder"}]},
        # `{n}` in an `ask` template: a parameter slot.
        "placeholder": {"name": "variable.other.placeholder.craft", "match": r"\{" + _IDENT + r"\}"},
        "declaration": {
            "match": r"\b(" + "|".join(NAMED_DECLARATIONS) + r")\s+" + name,
            "captures": {"1": {"name": "keyword.declaration.craft"}, "2": {"name": "entity.name.type.craft"}}},
        "field": {
            "match": r"\b(field)\s+" + name + r"(?:\s+" + name + ")?",
            "captures": {"1": {"name": "keyword.other.craft"}, "2": {"name": "variable.other.member.craft"},
                         "3": {"name": "storage.type.craft"}}},
        "param": {
            "match": r"\b(param|key|ref)\s+" + name,
            "captures": {"1": {"name": "keyword.other.craft"}, "2": {"name": "variable.parameter.craft"}}},
        "keywords": {"patterns": [{"name": scope, "match": _words(words)}
                                  for scope, words in keyword_classes.items()]},
        # A key starts a line, follows `{`, or follows two spaces (`{ epochs 3  lr 3e-4 }`);
        # the same word one space after a key is a value (`baseline_budget steps`).
        "setting-key": {"match": r"(?:^\s*|(?<=\{)\s*|(?<=\s\s))(" + _words(setting_keys()) + ")",
                        "captures": {"1": {"name": "variable.other.property.craft"}}},
        "same-rows-as": {"name": "support.constant.craft", "match": r"\bsame_rows_as\b"},
        "boolean": {"name": "constant.language.boolean.craft", "match": r"\b(?:true|false)\b"},
        "number": {"patterns": [
            {"name": "constant.numeric.duration.craft", "match": r"(?<![\w.])\d+(?:\.\d+)?(?:ms|s|m|h)\b"},
            {"name": "constant.numeric.percent.craft", "match": r"(?<![\w.])\d+(?:\.\d+)?%"},
            {"name": "constant.numeric.craft", "match": r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b"},
            {"name": "constant.numeric.craft", "match": r"(?<=\.\.)-?\d+(?:\.\d+)?\b"}]},
        "operator": {"patterns": [
            {"name": "keyword.operator.arrow.craft", "match": "->"},
            {"name": "keyword.operator.range.craft", "match": r"\.\."},
            {"name": "keyword.operator.arithmetic.craft", "match": r"[-+*/=]"},
            {"name": "punctuation.separator.comma.craft", "match": ","},
            {"name": "punctuation.section.block.craft", "match": r"[{}]"},
            {"name": "punctuation.section.parens.craft", "match": r"[()]"}]},
    }
    return repository


def textmate_grammar() -> dict:
    """The TextMate grammar of `.craft` files as a JSON-ready dict (deterministic)."""
    repository = _patterns()
    order = ("comment", "string-triple", "string-double", "declaration", "field", "param", "same-rows-as",
             "keywords", "boolean", "setting-key", "number", "operator")
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "craft",
        "scopeName": SCOPE,
        "fileTypes": ["craft"],
        "comment": "Generated by `python -m craftc.editor` from craftc/grammar.lark and "
                   "craftc/settings.py; do not edit by hand.",
        "patterns": [{"include": f"#{name}"} for name in order],
        "repository": repository,
    }


def language_configuration() -> dict:
    """VS Code's language configuration: comments, brackets, auto-closing pairs."""
    return {
        "comments": {"lineComment": "#"},
        "brackets": [["{", "}"], ["(", ")"]],
        "autoClosingPairs": [{"open": "{", "close": "}"}, {"open": "(", "close": ")"},
                             {"open": '"', "close": '"', "notIn": ["string", "comment"]}],
        "surroundingPairs": [["{", "}"], ["(", ")"], ['"', '"']],
        "indentationRules": {"increaseIndentPattern": r"\{[^}\"]*$", "decreaseIndentPattern": r"^\s*\}"},
        "wordPattern": _IDENT,
    }


def _dump(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def generated_files() -> dict[str, str]:
    """Repository-relative path -> text of every generated editor file."""
    grammar = _dump(textmate_grammar())
    return {
        "editors/textmate/craft.tmLanguage.json": grammar,
        "editors/vscode/syntaxes/craft.tmLanguage.json": grammar,
        "editors/vscode/language-configuration.json": _dump(language_configuration()),
    }


def main(argv: list[str] | None = None) -> int:
    """Write the editor files under ROOT (default: the current directory), or --check them."""
    parser = argparse.ArgumentParser(prog="python -m craftc.editor", description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default=".", help="repository root (default: .)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed file is stale")
    args = parser.parse_args(argv)
    root = Path(args.root)
    stale = []
    for rel, text in generated_files().items():
        path = root / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(rel)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {rel}")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run `python -m craftc.editor`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
