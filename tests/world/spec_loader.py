"""Load a schema spec into the Schema IR for the world tests.

Uses the front end's ``craftc.frontend.load_schema`` when it is available; until
then, a small private lowering of the Lark tree (schema specs only) stands in, so
the world can be tested against the real ``schema_specs/ads.craft``.
"""

from __future__ import annotations

import re
from pathlib import Path

from lark import Lark, Token, Tree

from craftc.ir import Entity, EntityField, EntityKey, EntityRef, FieldType, Metric, Schema

ROOT = Path(__file__).resolve().parents[2]
ADS_SPEC = ROOT / "schema_specs" / "ads.craft"


def load_spec(path: Path = ADS_SPEC, text: str | None = None) -> Schema:
    """The Schema IR of a spec file (or of ``text`` standing in for its content)."""
    if text is None:
        try:
            from craftc.frontend import load_schema  # the front end's loader, when present
        except ImportError:
            load_schema = None
        if load_schema is not None:
            result = load_schema(path)
            schema = getattr(result, "schema", None) or getattr(result, "schema_", None) or result
            if isinstance(schema, Schema):
                return schema
        text = Path(path).read_text()
    parser = Lark.open(str(ROOT / "craftc" / "grammar.lark"), parser="lalr")
    return _lower_schema(next(parser.parse(text).find_data("schema")), Path(path).name)


def snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _text(token: Token) -> str:
    value = str(token)
    return value[1:-1] if value.startswith('"') else value


def _lower_schema(tree: Tree, source: str) -> Schema:
    name, version = str(tree.children[0]), int(tree.children[1])
    doc, entities, metrics = "", [], []
    for item in tree.children[2:]:
        if item.data == "doc":
            doc = _text(item.children[0])
        elif item.data == "entity":
            entities.append(_lower_entity(item))
        elif item.data == "metric":
            metrics.append(_lower_metric(item))
    return Schema(name=name, version=version, doc=doc, source=source,
                  entities=tuple(entities), metrics=tuple(metrics))


def _binding(children) -> tuple[str | None, float | None]:
    for child in children:
        if isinstance(child, Tree) and child.data == "binding":
            scale = next((float(s.children[0]) for s in child.children[1:] if isinstance(s, Tree)), None)
            return _text(child.children[0]), scale
    return None, None


def _lower_entity(tree: Tree) -> Entity:
    name = str(tree.children[0])
    doc, table, key, fields, refs, deprecated = "", snake_case(name), None, [], [], None
    for item in tree.children[1:]:
        if item.data == "doc":
            doc = _text(item.children[0])
        elif item.data == "table":
            table = _text(item.children[0])
        elif item.data == "deprecated":
            deprecated = _text(item.children[0])
        elif item.data == "key":
            column, _ = _binding(item.children)
            key = EntityKey(name=str(item.children[0]), column=column or str(item.children[0]))
        elif item.data == "ref":
            column, _ = _binding(item.children)
            ref_doc = next((_text(c) for c in item.children[2:] if isinstance(c, Token)), "")
            nullable = any(isinstance(c, Tree) and c.data == "nullable" for c in item.children)
            refs.append(EntityRef(name=str(item.children[0]), target=str(item.children[1]),
                                  column=column or f"{item.children[0]}_id", doc=ref_doc, nullable=nullable))
        elif item.data == "field":
            fields.append(_lower_field(item))
    return Entity(name=name, doc=doc, table=table, view=snake_case(name),
                  key=key or EntityKey(name="id", column="id"), fields=tuple(fields), refs=tuple(refs),
                  deprecated=deprecated)


def _lower_field(tree: Tree) -> EntityField:
    name, type_tree = str(tree.children[0]), tree.children[1]
    kind, *values = [str(t) for t in type_tree.children]
    column, scale = _binding(tree.children)
    doc = next((_text(c) for c in tree.children[2:] if isinstance(c, Token)), "")
    flags = [c for c in tree.children[2:] if isinstance(c, Tree)]
    deprecated = next((_text(c.children[0]) for c in flags if c.data == "deprecated"), None)
    return EntityField(name=name, type=FieldType(kind=kind, values=tuple(values)), doc=doc,
                       column=column or name, scale=scale,
                       nullable=any(c.data == "nullable" for c in flags), deprecated=deprecated)


def _lower_metric(tree: Tree) -> Metric:
    name = str(tree.children[0])
    doc = _text(tree.children[1]) if isinstance(tree.children[1], Token) else ""
    entities = sorted({str(d.children[0]) for d in tree.find_data("dotted")})
    return Metric(name=name, doc=doc, expr="", sql="", entities=tuple(entities))
