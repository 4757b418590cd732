"""Naming conventions the guesses read: types, id-like columns, table aliases, history columns.

Example:
    >>> type_kind("DECIMAL(12,2)"), is_id_like("STORE_ID"), is_id_like("paid")
    ('float', True, False)
    >>> table_aliases("google_ads.campaign_history")
    ['campaign_history', 'campaign']
"""

from __future__ import annotations

import re

from craftc.importer.names import camel_words

__all__ = ["type_kind", "is_id_like", "id_base", "table_aliases", "singular", "is_version_column",
           "entity_words", "KEYABLE_KINDS", "common_prefixes"]

INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT", "UHUGEINT", "INT64", "INT4", "INT8", "INT2", "NUMBER", "LONG", "SHORT")
FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC", "FLOAT64", "FLOAT4", "FLOAT8")
# Kinds a key or a ref can be bound to (a float or a timestamp is no identifier).
KEYABLE_KINDS = ("int", "string", "id")
TABLE_AFFIXES = re.compile(r"^(dim_|fct_|fact_|f_|d_|stg_|raw_|tbl_|src_|int_)|(_dim|_fact|_fct|_tbl|_table)$")
HISTORY_SUFFIX = re.compile(r"_(history|hist|snapshot|snapshots|scd|versions|changelog)$")
ID_SUFFIX = re.compile(r"_(id|key|sk|uuid)$")
# Columns that mark one version of a row: SCD validity, snapshot and sync timestamps.
VERSION_COLUMNS = re.compile(
    r"^(dbt_)?(valid_from|valid_to|valid_until|effective_from|effective_to|start_date|end_date|updated_at)$"
    r"|^(last_)?(modified|updated|changed)_(time|at|timestamp|date)$|^(modified|update|updated)_?time$"
    r"|^_fivetran_(synced|start|end|active)$|^(is_current|is_most_recent_record|snapshot_(date|at))$"
    r"|^(_?(airbyte|stitch|sdc)_\w*(extracted|synced|batched)\w*)$|^_loaded_at$")


def type_kind(source_type: str) -> str:
    """The language type kind for a source type name."""
    base = source_type.upper().split("(")[0].strip()
    if base in INT_TYPES:
        return "int"
    if base in FLOAT_TYPES:
        return "float"
    if base in ("BOOLEAN", "BOOL", "BIT", "LOGICAL"):
        return "bool"
    if base == "DATE":
        return "date"
    if base.startswith("TIMESTAMP") or base in ("DATETIME", "TIMESTAMPTZ"):
        return "timestamp"
    if base == "UUID":
        return "id"
    return "string"


def is_id_like(name: str) -> bool:
    """`id`, `campaign_id`, `STORE_ID`, `accountId`, `order_key`: names that hold identifiers."""
    if re.search(r"[a-z0-9]I[dD]$", name):
        return True
    low = name.lower()
    return low in ("id", "key", "uuid") or bool(ID_SUFFIX.search(low))


def id_base(name: str) -> str:
    """What an id-like column names: `ad_group_id` -> `ad_group`; `id` -> ``""``."""
    words = camel_words(name)
    if words and words[-1] in ("id", "key", "sk", "uuid"):
        words = words[:-1]
    return "_".join(words)


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def entity_words(table: str) -> list[str]:
    """The words of an entity's name: `adw.cmp_dim` -> [cmp], `order_items` -> [order, item]."""
    base = "_".join(camel_words(table.split(".")[-1]))
    stripped = TABLE_AFFIXES.sub("", base) or base
    words = [w for w in stripped.split("_") if w]
    if words:
        words[-1] = singular(words[-1])
    return words


def common_prefixes(tables: list[str]) -> tuple[str, ...]:
    """Word prefixes a connector puts before every table name (`pw_`, `tiktok_ads_`): a
    prefix of one or two words that at least two tables and three quarters of all tables
    share, and that is not itself the name of a table (`ad_` of `ad_history`, `ad_stats`).

    Example:
        >>> common_prefixes(["pw_campaign_history", "pw_ad_report_daily", "pw_advertiser"])
        ('pw_',)
    """
    bases = ["_".join(camel_words(t.split(".")[-1])) for t in tables]
    # A word that is itself a table (`ad` of `ad_history`) is an entity, not a prefix.
    entities = {HISTORY_SUFFIX.sub("", TABLE_AFFIXES.sub("", b)) for b in bases}
    entities |= {singular(e) for e in entities}
    found = []
    for n_words in (2, 1):
        counts: dict[str, int] = {}
        for b in bases:
            words = b.split("_")
            if len(words) > n_words:
                prefix = "_".join(words[:n_words]) + "_"
                counts[prefix] = counts.get(prefix, 0) + 1
        for prefix, n in sorted(counts.items()):
            if n >= 2 and 4 * n >= 3 * len(bases) and prefix[:-1] not in entities \
                    and not any(f.startswith(prefix) for f in found):
                found.append(prefix)
    return tuple(found)


def table_aliases(table: str, prefixes: tuple[str, ...] = ()) -> list[str]:
    """What an id column may call a table, strongest first (singular, affixes, a common
    prefix of the warehouse's tables and history suffixes stripped): an `ad_group_id` names
    `ad_group_history` as well as `ad_groups` and `pw_ad_group_history`."""
    base = "_".join(camel_words(table.split(".")[-1]))
    unprefixed = next((base[len(p):] for p in prefixes if base.startswith(p) and len(base) > len(p)), base)
    out = []
    for name in (base, TABLE_AFFIXES.sub("", base), HISTORY_SUFFIX.sub("", TABLE_AFFIXES.sub("", base)),
                 unprefixed, TABLE_AFFIXES.sub("", unprefixed),
                 HISTORY_SUFFIX.sub("", TABLE_AFFIXES.sub("", unprefixed))):
        for alias in (name, "_".join(name.split("_")[:-1] + [singular(name.split("_")[-1])]) if name else ""):
            if alias and alias not in out:
                out.append(alias)
    return out


def is_version_column(name: str) -> bool:
    """`valid_from`, `_fivetran_synced`, `updated_at`, `dbt_valid_to`: one version of a row."""
    return bool(VERSION_COLUMNS.match("_".join(camel_words(name)) if not name.startswith("_") else name.lower()))
