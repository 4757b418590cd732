"""The one jinja2 environment every emitted text file is rendered with.

``StrictUndefined`` turns a misspelt template variable into an error at compile time
instead of an empty string in a prompt; ``trim_blocks``/``lstrip_blocks`` let
templates put ``{% if %}`` lines on their own without leaving blank lines behind.
"""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined

__all__ = ["environment", "render_template"]


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The shared environment over ``craftc/templates``."""
    return Environment(
        loader=PackageLoader("craftc", "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render_template(name: str, **context) -> str:
    """Render ``craftc/templates/<name>`` with ``context``.

    Example:
        >>> render_template("prompts/turn.md.j2", format={"code": "CODE"}).splitlines()[0]
        '## user'
    """
    return environment().get_template(name).render(**context)
