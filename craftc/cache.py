"""Where craftc keeps its disk memos, and how each is keyed so that it is never stale.

A warm compile loads three things from here instead of rebuilding them: lark's LALR
tables for ``grammar.lark`` (:mod:`craftc.parser`), the compiled jinja2 templates
(:mod:`craftc.emit.render`) and what each reference solution reads
(:mod:`craftc.check.read_cache`). Every entry is named by a hash of everything that
determines it (the grammar or template text, the library and Python versions, the
options it was built with), so an entry is either right or absent.

The directory is ``$CRAFTC_CACHE_DIR``, else ``$XDG_CACHE_HOME/craftc``, else
``~/.cache/craftc``: per user, never a shared temporary directory where another user
could leave a file for craftc to unpickle. ``CRAFTC_NO_CACHE=1`` turns every cache off.
A cache that cannot be created, read or written is skipped: what compile writes never
depends on a cache, only how long it takes does.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["cache_dir", "cache_subdir", "content_key"]


def cache_dir() -> Path | None:
    """The cache root, or None when caching is off (``CRAFTC_NO_CACHE``)."""
    if os.environ.get("CRAFTC_NO_CACHE"):
        return None
    if os.environ.get("CRAFTC_CACHE_DIR"):
        return Path(os.environ["CRAFTC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "craftc"


def cache_subdir(name: str) -> Path | None:
    """``<cache root>/<name>``, created (owner-only) if needed; None when caching is off or
    the directory cannot be created (a read-only home, a full disk)."""
    root = cache_dir()
    if root is None:
        return None
    folder = root / name
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return folder


def content_key(*parts: str | bytes) -> str:
    """The sha256 (hex) of ``parts``, each length-prefixed so that ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        digest.update(b"%d:" % len(data))
        digest.update(data)
    return digest.hexdigest()
