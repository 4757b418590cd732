"""A disk memo of what each reference solution reads, so that a warm compile parses no SQL.

Resolving a solution's columns needs sqlglot, whose duckdb dialect alone takes about
80 ms to import, plus a parse of every query (about 100 ms for the ads recipe's 57).
The answer depends only on the solution's text, the schema's views and the checker's
own code, so it is stored under the sha256 of those three in craftc's cache directory
(:mod:`craftc.cache`: ``$CRAFTC_CACHE_DIR`` or ``~/.cache/craftc``), one small JSON file
per solution. ``CRAFTC_NO_CACHE=1`` turns it off. A cache that cannot be read or
written is ignored: results never depend on it, only speed does.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from craftc.atomic import write_atomic
from craftc.cache import cache_dir

__all__ = ["lookup", "store", "views_digest"]

# Relative to craftc/; sql_facts decides which strings of a solution are SQL.
_CHECKER_FILES = ("check/solution_sql.py", "check/solution_frames.py", "check/solution_parse.py", "check/read_cache.py",
                  "sql_facts.py")


@lru_cache(maxsize=1)
def _checker_digest() -> str:
    """The checker's own source: editing it invalidates every entry."""
    digest = hashlib.sha256()
    here = Path(__file__).parent.parent
    for name in _CHECKER_FILES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=8)
def views_digest(views_key: tuple) -> str:
    return hashlib.sha256(repr(views_key).encode("utf-8")).hexdigest()


def _path(text: str, views: str) -> Path | None:
    root = cache_dir()
    if root is None:
        return None
    key = hashlib.sha256(f"{_checker_digest()}\0{views}\0{text}".encode("utf-8")).hexdigest()
    return root / "solution-reads" / key[:2] / f"{key}.json"


def lookup(text: str, views: str) -> dict | None:
    """The stored findings for this solution and schema, or None."""
    path = _path(text, views)
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def store(text: str, views: str, value: dict) -> None:
    """Store findings atomically; failures (read-only home, full disk) are ignored."""
    path = _path(text, views)
    if path is None:
        return
    try:
        write_atomic(path, json.dumps(value))
    except OSError:
        pass
