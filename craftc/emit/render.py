"""The one jinja2 environment every emitted text file is rendered with.

``StrictUndefined`` turns a misspelt template variable into an error at compile time
instead of an empty string in a prompt; ``trim_blocks``/``lstrip_blocks`` let
templates put ``{% if %}`` lines on their own without leaving blank lines behind.

Compiling the templates to Python takes longer than rendering them, so the compiled
code is kept in craftc's cache dir (:mod:`craftc.cache`) with jinja2's bytecode cache.
Jinja2 checks each entry against a hash of the template's source; it does not check
its own version or the environment's options, which shape the compiled code too, so
those name the directory.
"""

from __future__ import annotations

import sys
from functools import lru_cache

import jinja2
from jinja2 import BytecodeCache, Environment, FileSystemBytecodeCache, PackageLoader, StrictUndefined
from jinja2.bccache import Bucket

from craftc.cache import cache_subdir, content_key

__all__ = ["environment", "render_template"]

_OPTIONS = {"keep_trailing_newline": True, "trim_blocks": True, "lstrip_blocks": True, "autoescape": False}


class _TolerantBytecodeCache(FileSystemBytecodeCache):
    """jinja2's file cache, except that an entry that cannot be read or written is skipped:
    jinja2 itself raises when the directory has become unwritable or an entry is not a
    pickle. Skipping means compiling the template from its source, as with no cache."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - any unreadable entry is a miss
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache
            pass


def _bytecode_cache() -> BytecodeCache | None:
    key = content_key(jinja2.__version__, sys.version, repr(sorted(_OPTIONS.items())))
    folder = cache_subdir(f"jinja2-{key[:16]}")
    return _TolerantBytecodeCache(str(folder)) if folder is not None else None


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The shared environment over ``craftc/templates``."""
    return Environment(loader=PackageLoader("craftc", "templates"), undefined=StrictUndefined,
                       bytecode_cache=_bytecode_cache(), **_OPTIONS)


def render_template(name: str, **context) -> str:
    """Render ``craftc/templates/<name>`` with ``context``.

    Example:
        >>> render_template("prompts/turn.md.j2", format={"code": "CODE"}).splitlines()[0]
        '## user'
    """
    return environment().get_template(name).render(**context)
