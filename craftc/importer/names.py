"""Names the importer writes: valid, never a keyword, unique within their scope.

A warehouse may call a column `table`, `Ümsatz`, `2nd value` or `id` twice (once as
`ID`); the spec written from it must still parse and check. Every identifier goes
through :func:`identifier`, and every member of an entity through one
:class:`NameAllocator`, which hands out each name once (case-insensitively, the way
DuckDB compares the view columns the names become) and renames deterministically.

Example:
    >>> identifier("Order Total (€)"), identifier("table"), identifier("2nd")
    ('order_total', 'table_', 'c_2nd')
    >>> names = NameAllocator()
    >>> names.take(["id"]), names.take(["id"]), names.take(["id"])
    ('id', 'id_2', 'id_3')
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["language_keywords", "identifier", "camel_words", "NameAllocator", "is_name"]

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Keywords that are also names: `currency` starts a line only where no name may (a schema
# item, a field's flag), so the parser reads it as a name everywhere else (`field currency
# string`, `Account.currency`, `check all currency == "USD"`), and a column of that name
# (common in any warehouse with money) keeps it.
NAME_KEYWORDS = frozenset({"currency"})


@lru_cache(maxsize=1)
def language_keywords() -> frozenset[str]:
    """Every word the grammar spells literally (`table`, `ref`, `one_of`, ...).

    Read from craftc/grammar.lark itself, so a keyword added there is avoided here.
    """
    from craftc.parser import get_parser

    return frozenset(t.pattern.value for t in get_parser().terminals
                     if t.pattern.type == "str" and NAME.match(t.pattern.value)) - NAME_KEYWORDS


def is_name(text: str) -> bool:
    """A NAME token of the language that is not a keyword (an enum value, a member name)."""
    return bool(NAME.match(text)) and text not in language_keywords()


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def camel_words(text: str) -> list[str]:
    """Lower-case ASCII words of any spelling: `OrderItems`, `order-items`, `ORDER_ITEMS`."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", _ascii(text))
    return [w for w in re.split(r"[^A-Za-z0-9]+", text.lower()) if w]


def identifier(text: str, fallback: str = "c") -> str:
    """A snake_case member name for a physical name; `fallback` prefixes what starts badly."""
    words = camel_words(text)
    name = "_".join(words) or fallback
    if name[0].isdigit():
        name = f"{fallback}_{name}"
    return name + "_" if name in language_keywords() else name


class NameAllocator:
    """Hands out each name once within one scope (an entity's members, a schema's entities)."""

    def __init__(self, taken: set[str] | None = None):
        self.used: set[str] = {n.lower() for n in taken or ()}

    def free(self, *names: str) -> bool:
        return all(n.lower() not in self.used for n in names)

    def take(self, candidates: list[str], also: str = "") -> str:
        """The first free candidate, else the first one numbered `_2`, `_3`, ...

        ``also`` is a suffix whose name must be free too (a ref `campaign` also names the
        view column `campaign_id`), and is taken with it.
        """
        for name in candidates:
            if self.free(name, name + also):
                return self._claim(name, also)
        n = 2
        while not self.free(f"{candidates[0]}_{n}", f"{candidates[0]}_{n}{also}"):
            n += 1
        return self._claim(f"{candidates[0]}_{n}", also)

    def _claim(self, name: str, also: str) -> str:
        self.used.add(name.lower())
        if also:
            self.used.add((name + also).lower())
        return name
