"""The business vocabulary of a schema, for reading plans and code against it."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SchemaTerms"]


def _words(name: str) -> str:
    """``DailyStat`` / ``daily_stat`` -> ``daily stat``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return spaced.lower().strip()


@dataclass(frozen=True)
class SchemaTerms:
    """Entity names with their business phrases and logical views; metrics with their entities."""

    entities: dict[str, tuple[str, ...]]   # entity -> phrases a plan may use ("daily stat", "campaign")
    views: dict[str, str]                  # logical view name -> entity
    metrics: dict[str, tuple[str, ...]]    # metric -> entities it reads
    identifiers: frozenset[str]            # physical tables/columns and view names: DDL words
    judge: object = None                   # the distill step's plan_code judge over the same schema

    @classmethod
    def from_schema(cls, schema) -> "SchemaTerms":
        """From a ``craftc.ir.Schema``."""
        entities, views, identifiers = {}, {}, set()
        for entity in schema.entities:
            phrases = {_words(entity.name), _words(entity.view)}
            entities[entity.name] = tuple(sorted(phrases))
            views[entity.view.lower()] = entity.name
            views[entity.name.lower()] = entity.name
            identifiers.update({entity.table.lower(), entity.table.split(".")[-1].lower(), entity.view.lower()})
            if entity.history is not None:         # every version of the entity, under its own view
                views[entity.history.view.lower()] = entity.name
                identifiers.add(entity.history.view.lower())
            identifiers.update(f.column.lower() for f in entity.fields if "_" in f.column)
            identifiers.update(r.column.lower() for r in entity.refs if "_" in r.column)
            if entity.key is not None:
                identifiers.add(entity.key.column.lower())
        metrics = {m.name: tuple(m.entities) for m in schema.metrics}
        from runtime.distill.judges import PlanCodeJudge
        from runtime.distill.vocabulary import SchemaVocabulary

        judge = PlanCodeJudge(SchemaVocabulary.from_schema(schema))
        return cls(entities, views, metrics, frozenset(i for i in identifiers if "_" in i or "." in i), judge)

    def entities_in_text(self, text: str) -> set[str]:
        """Entities a plan names in business words (singular or plural)."""
        low = " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "
        found = set()
        for entity, phrases in self.entities.items():
            if any(f" {p} " in low or f" {p}s " in low or f" {p}es " in low
                   or (p.endswith("y") and f" {p[:-1]}ies " in low) for p in phrases):
                found.add(entity)
        return found

    def metrics_in_text(self, text: str) -> set[str]:
        low = " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "
        return {m for m in self.metrics if f" {_words(m)} " in low}
