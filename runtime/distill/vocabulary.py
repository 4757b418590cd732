"""The schema's words: business names of entities and metrics, and its physical names.

Judges read a PLAN in business words ("click-through rate", "ad groups") and code in
logical names (``daily_stat.clicks``); this module is the bridge. It also lists the
physical table and column names that must never appear in a PLAN.

Example:
    >>> split_camel("AdGroup")
    'ad group'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from craftc.ir import Schema

__all__ = ["SchemaVocabulary", "MetricWords", "split_camel", "normalise_words", "mentions"]

_DOTTED = re.compile(r"\b([A-Z][A-Za-z0-9]*)\.([a-z_][A-Za-z0-9_]*)")


def split_camel(name: str) -> str:
    """``AdGroup`` -> ``ad group``; ``daily_stat`` -> ``daily stat``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return spaced.lower().strip()


def normalise_words(text: str) -> str:
    """Lower-case, hyphens and underscores as spaces, single spaces: for phrase matching."""
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower().replace("-", " ")).strip() + " "


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words (after normalising both)."""
    words = normalise_words(phrase).strip()
    return bool(words) and f" {words} " in normalise_words(text)


def _common_words(schema: Schema, entity_phrases: dict[str, tuple[str, ...]]) -> list[str]:
    """Entities whose business word the schema also uses for something else: an enum value
    (`txn_type` `charge`) or a field of another entity (`unit_price`), so the word alone
    does not say the entity is meant (see `SchemaVocabulary.common`). Docs are not counted:
    a doc that says "the campaign's budget" refers to the entity."""
    out = []
    for entity in schema.entities:
        texts = []
        for other in schema.entities:
            for f in other.fields:
                texts.extend(str(v) for v in f.type.values)
                if other.name != entity.name and not f.name.endswith("_id"):   # `customer_id` names the entity
                    texts.append(f.name)
        blob = normalise_words(" ".join(texts))
        if any(n in blob for n in _norms(entity_phrases[entity.name])):
            out.append(entity.name)
    return out


def _norms(phrases) -> tuple[str, ...]:
    """Each phrase as ``mentions`` looks for it: normalised, padded, empty ones left out."""
    return tuple(f" {w} " for w in (normalise_words(p).strip() for p in phrases) if w)


@dataclass(frozen=True)
class MetricWords:
    name: str
    phrases: tuple[str, ...]          # business ways to say it
    fields: tuple[str, ...]           # logical field names its expression reads


@dataclass
class SchemaVocabulary:
    """Business words and physical names of one schema."""

    entity_phrases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    entity_names: dict[str, tuple[str, ...]] = field(default_factory=dict)  # view + ref columns
    metrics: dict[str, MetricWords] = field(default_factory=dict)
    physical: tuple[str, ...] = ()
    logical: frozenset[str] = frozenset()
    # Entities whose business word the schema also uses for something else (an enum value,
    # another entity's field): "charges" in a payments plan may be money taken, not rows of
    # Charge. A plan names such an
    # entity only as an identifier: `Charge`, or its view in backticks.
    common: frozenset[str] = frozenset()

    @classmethod
    def from_schema(cls, schema: Schema) -> SchemaVocabulary:
        vocab = cls()
        logical: set[str] = set()
        for entity in schema.entities:
            words = split_camel(entity.name)
            vocab.entity_phrases[entity.name] = (words, words + "s", words + "es")
            logical.add(entity.view.lower())
            if entity.key is not None:
                logical.add(entity.key.name.lower())
            if entity.history is not None:
                logical.add(entity.history.view.lower())
            logical.update(f.name.lower() for f in entity.fields)
            logical.update(r.name.lower() for r in entity.refs)
        for entity in schema.entities:
            refs = [f"{r.name}_id".lower() for other in schema.entities for r in other.refs
                    if r.target == entity.name]
            # "clicks" in a plan may mean the entity or a daily_stat column of that name:
            # either counts as reading it.
            words = split_camel(entity.name).replace(" ", "_")
            history = (entity.history.view.lower(),) if entity.history is not None else ()
            vocab.entity_names[entity.name] = (entity.view.lower(), *history, *refs, words, words + "s")
        for metric in schema.metrics:
            phrases = {metric.name.lower(), split_camel(metric.name)}
            if metric.doc:
                # "Click-through rate: clicks per impression" -> "click-through rate"
                head = re.split(r"[:,(]", metric.doc)[0].strip().lower()
                if head:
                    phrases.add(head)
            fields = tuple(dict.fromkeys(m.group(2).lower() for m in _DOTTED.finditer(metric.expr)))
            vocab.metrics[metric.name] = MetricWords(metric.name, tuple(sorted(phrases)), fields)
        vocab.common = frozenset(_common_words(schema, vocab.entity_phrases))
        physical: set[str] = set()
        # A physical name that is also an entity's business word ("products" for the
        # table `shop.products` of entity Product) is the business word in a plan.
        business = {p.replace(" ", "_") for phrases in vocab.entity_phrases.values() for p in phrases}
        for entity in schema.entities:
            table = entity.table.lower()
            for name in {table, table.rsplit(".", 1)[-1]}:
                if name not in logical and name not in business:
                    physical.add(name)
            key = [entity.key.column] if entity.key is not None else []
            columns = key + [f.column for f in entity.fields] + [r.column for r in entity.refs]
            physical.update(c.lower() for c in columns if c.lower() not in logical)
        vocab.physical = tuple(sorted(physical))
        vocab.logical = frozenset(logical)
        return vocab

    # The judges ask these of every candidate: phrases are normalised once per vocabulary,
    # the text once per call (normalising per phrase was a tenth of the gate's host time).
    @cached_property
    def _metric_norms(self) -> dict[str, tuple[str, ...]]:
        return {name: _norms(words.phrases) for name, words in self.metrics.items()}

    @cached_property
    def _entity_norms(self) -> dict[str, tuple[str, ...]]:
        return {name: _norms(phrases) for name, phrases in self.entity_phrases.items()}

    def metrics_named(self, text: str) -> list[str]:
        """Metrics whose business name occurs in ``text``."""
        words = normalise_words(text)
        return [name for name, norms in self._metric_norms.items() if any(n in words for n in norms)]

    def entities_named(self, text: str) -> list[str]:
        """Entities whose business name occurs in ``text`` outside a metric's name.

        "return on ad spend" names a metric, not the Ad entity, so metric phrases are
        taken out of the text before entities are looked for.
        """
        rest = normalise_words(text)
        # Longest first, across metrics: "return on ad spend" before "spend".
        for norm in sorted({n for norms in self._metric_norms.values() for n in norms}, key=len, reverse=True):
            rest = rest.replace(norm, " | ")
        named = []
        for name, norms in self._entity_norms.items():
            if name in self.common:
                if self._as_identifier(name, text):
                    named.append(name)
            elif any(n in rest for n in norms):
                named.append(name)
        return named

    def _as_identifier(self, name: str, text: str) -> bool:
        """``name`` written as an identifier: `Price`, `Prices`, or its view in backticks."""
        view = self.entity_names[name][0]
        if f"`{view}`" in text.lower() or f"`{view}." in text.lower():
            return True
        for hit in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?:e?s)?(?![A-Za-z0-9_])", text):
            before = text[:hit.start()].rstrip()
            # "Prices are in cents." starts a sentence: capitalised, but a common noun.
            if before and before[-1] not in ".!?:\n" or any(c.isupper() for c in name[1:]):
                return True
        return False

    def physical_named(self, text: str) -> list[str]:
        """Physical table or column names that occur in ``text``."""
        lowered = text.lower()
        return [name for name in self.physical          # the substring test skips most regexes
                if name in lowered and re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", lowered)]
