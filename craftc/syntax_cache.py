"""A disk memo of each .craft file's syntax tree, so that a warm compile neither parses nor imports lark.

Parsing the ads recipe and its schema spec (about 4,500 tokens) costs about 100 ms of
CPU: importing lark, loading its tables, building the contextual lexer, the LALR parse
and the syntax tree. Reading both trees back from here costs about 8 ms. A tree
depends only on the file's text, the name its spans carry and the code that builds
it (the grammar, the parser, the syntax classes, ``Span``, and the lark, pydantic and
Python versions), so an entry stores the sha256 of all of those and is used only
when it matches. There is one entry per source file (named by its path and span
name): editing a recipe replaces its entry instead of adding one per edit, and past
MAX_ENTRIES files the least recently written half is removed.

Only trees that parsed without a diagnostic are stored, so every syntax error is
reported by lark itself. The entry is a pickle restricted to the syntax classes and
``Span``: a file that holds anything else, or does not load, is a miss, never an
error. Entries live in craftc's cache dir (:mod:`craftc.cache`; ``CRAFTC_NO_CACHE=1``
turns them off).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pickle
import sys
from functools import lru_cache
from pathlib import Path

import pydantic

from craftc import ir, syntax
from craftc.atomic import write_atomic
from craftc.cache import cache_subdir, content_key
from craftc.syntax import SourceFile

__all__ = ["lookup", "store", "MAX_ENTRIES"]

MAX_ENTRIES = 256

_HERE = Path(__file__).parent
# The code a syntax tree depends on: editing any of these invalidates every entry.
_BUILDER_FILES = ("grammar.lark", "parser.py", "to_syntax.py", "syntax.py", "ir.py", "syntax_cache.py")
# What an entry may contain besides builtins (tuples, strings, numbers, None, sets).
_ALLOWED = {("craftc.ir", "Span"): ir.Span} | {
    ("craftc.syntax", name): getattr(syntax, name) for name in syntax.__all__
    if isinstance(getattr(syntax, name), type)
}


@lru_cache(maxsize=1)
def _builder_digest() -> str:
    parts = [(_HERE / name).read_bytes() for name in _BUILDER_FILES]
    # lark's version without importing lark (which is what a hit saves): its installed
    # __init__.py, whose size and mtime change whenever lark is reinstalled.
    spec = importlib.util.find_spec("lark")
    lark_init = os.stat(spec.origin) if spec and spec.origin else None
    lark_id = f"{spec.origin}:{lark_init.st_size}:{lark_init.st_mtime_ns}" if lark_init else "no lark"
    return content_key(*parts, lark_id, pydantic.VERSION, sys.version)


def _entry(path: Path, name: str) -> Path | None:
    folder = cache_subdir("syntax")
    if folder is None:
        return None
    return folder / f"{content_key(str(path.resolve()), name)[:32]}.pickle"


def _key(name: str, text: str) -> str:
    return content_key(_builder_digest(), name, text)


class _SyntaxUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a syntax tree") from None


def lookup(path: Path, name: str, text: str) -> SourceFile | None:
    """The stored syntax tree of ``text`` (read from ``path``, spans naming ``name``), or None."""
    entry = _entry(path, name)
    if entry is None:
        return None
    try:
        with open(entry, "rb") as fh:
            key, tree = _SyntaxUnpickler(fh).load()
    except Exception:  # noqa: BLE001 - missing, truncated, foreign or corrupt: a miss
        return None
    if key != _key(name, text) or not isinstance(tree, SourceFile):
        return None
    return tree


def store(path: Path, name: str, text: str, tree: SourceFile) -> None:
    """Store a tree atomically (write, then rename); a cache that cannot be written is skipped."""
    entry = _entry(path, name)
    if entry is None:
        return
    try:
        data = pickle.dumps((_key(name, text), tree), protocol=pickle.HIGHEST_PROTOCOL)
        write_atomic(entry, data)
        _prune(entry.parent)
    except (OSError, pickle.PicklingError, RecursionError):
        pass


def _prune(folder: Path) -> None:
    """Keep the cache bounded: test suites and scratch directories parse many one-off files."""
    entries = [e for e in os.scandir(folder) if e.name.endswith(".pickle")]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat().st_mtime_ns)
    for old in entries[: len(entries) - MAX_ENTRIES // 2]:
        with contextlib.suppress(OSError):
            os.unlink(old.path)
