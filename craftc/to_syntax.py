"""The lark parse tree of a .craft file -> its syntax tree (:mod:`craftc.syntax`).

:class:`ToSyntax` is the parser's transformer: one method per grammar rule, each
building a frozen dataclass with the :class:`~craftc.ir.Span` of its source. It only
builds nodes and never reports errors (see :func:`craftc.parser.parse_source`).
"""

from __future__ import annotations

from lark import Token, Transformer, v_args

from craftc.ir import Span
from craftc.syntax import (
    Binding, Block, EntityDecl, ExpectDecl, Expr, FieldDecl, GrainDecl, HistoryDecl, KeyDecl, MetricDecl,
    ParamDecl, ProfileDecl, RecipeDecl, RefDecl, SchemaDecl, Setting, SourceFile, TurnDecl, Value, WorkflowDecl, unquote,
)

__all__ = ["ToSyntax"]


def _as_expr(node) -> Expr:
    """Numbers in expressions come through the shared `number` rule as Values."""
    if isinstance(node, Value):
        return Expr("number", text=node.text, span=node.span)
    return node


def _tok_span(file: str, tok: Token) -> Span:
    # Positions come from the lexer and are ints by construction: skip validation,
    # which is most of the cost of a span on large files.
    return Span.model_construct(file=file, line=tok.line, col=tok.column, end_line=tok.end_line,
                                end_col=tok.end_column)


class ToSyntax(Transformer):
    """Parse tree -> syntax dataclasses. Builds nodes only; never reports errors."""

    def __init__(self, file: str):
        super().__init__()
        self.file = file

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(file=self.file, line=1, col=1, end_line=1, end_col=1)
        return Span.model_construct(file=self.file, line=meta.line, col=meta.column,
                                    end_line=meta.end_line, end_col=meta.end_column)

    def _ts(self, tok: Token) -> Span:
        return _tok_span(self.file, tok)

    # ------------------------------------------------------------ values

    @v_args(meta=True)
    def string(self, meta, c):
        return Value("string", str(c[0]), self._ts(c[0]))

    @v_args(meta=True)
    def number(self, meta, c):
        return Value("number", str(c[0]), self._ts(c[0]))

    @v_args(meta=True)
    def duration(self, meta, c):
        return Value("duration", str(c[0]), self._ts(c[0]))

    @v_args(meta=True)
    def percent(self, meta, c):
        return Value("percent", str(c[0]), self._ts(c[0]))

    @v_args(meta=True)
    def name(self, meta, c):
        return Value("name", str(c[0]), self._ts(c[0]))

    @v_args(meta=True)
    def env(self, meta, c):
        return Value("env", str(c[0]), self._span(meta))

    @v_args(meta=True)
    def qualified(self, meta, c):
        value, tok = c
        kind = {"NUMBER": "number", "DURATION": "duration", "PERCENT": "percent"}[tok.type]
        qualifier = Value(kind, str(tok), self._ts(tok))
        return Value(value.kind, value.text, value.span, qualifier)

    def name_list(self, c):
        return tuple(str(t) for t in c)

    @v_args(meta=True)
    def param_ref(self, meta, c):
        return Value("param", str(c[0]), self._ts(c[0]))

    @v_args(meta=True)
    def compare(self, meta, c):
        return Value("compare", str(c[0]), self._ts(c[0]))

    # ------------------------------------------------------------ blocks and settings

    def setting_key(self, c):
        return c[0]

    def recipe_key(self, c):
        return c[0]

    @v_args(meta=True)
    def block_setting(self, meta, c):
        key = c[0]
        return Setting(str(key), self._ts(key), tuple(c[1:]), None, self._span(meta))

    @v_args(meta=True)
    def nested(self, meta, c):
        key, block = c
        return Setting(str(key), self._ts(key), (), block, self._span(meta))

    @v_args(meta=True)
    def setting(self, meta, c):
        key = c[0]
        return Setting(str(key), self._ts(key), tuple(c[1:]), None, self._span(meta))

    @v_args(meta=True)
    def block(self, meta, c):
        return Block("", None, None, tuple(c), self._span(meta))

    def _named_block(self, kind: str, meta, c) -> Block:
        name_tok = c[0] if c and isinstance(c[0], Token) else None
        rest = c[1:] if name_tok is not None else c
        settings = rest[0].settings if rest else ()
        return Block(kind, str(name_tok) if name_tok else None,
                     self._ts(name_tok) if name_tok else None, settings, self._span(meta))

    def __default__(self, data, children, meta):
        if data in ("tool", "format", "teacher", "judge", "gate", "reward", "model", "stage", "eval"):
            return self._named_block(str(data), meta, children)
        return super().__default__(data, children, meta)

    # ------------------------------------------------------------ schema

    @v_args(meta=True)
    def doc(self, meta, c):
        return ("doc", unquote(str(c[0])), self._span(meta))

    @v_args(meta=True)
    def deprecated(self, meta, c):
        return ("deprecated", unquote(str(c[0])), self._span(meta))

    @v_args(meta=True)
    def table(self, meta, c):
        return ("table", unquote(str(c[0])), self._ts(c[0]))

    def nullable(self, c):
        return ("nullable",)

    def scale(self, c):
        return ("scale", float(c[0]))

    def binding(self, c):
        scale = c[1][1] if len(c) > 1 else None
        return Binding(unquote(str(c[0])), self._ts(c[0]), scale)

    @v_args(meta=True)
    def type(self, meta, c):
        return (str(c[0]), tuple(str(t) for t in c[1:]), self._span(meta))

    @v_args(meta=True)
    def key(self, meta, c):
        binding = next((x for x in c[1:] if isinstance(x, Binding)), None)
        typed = next((x for x in c[1:] if isinstance(x, tuple) and len(x) == 3), None)
        return KeyDecl(str(c[0]), self._ts(c[0]), binding, self._span(meta),
                       type_name=typed[0] if typed else None, type_span=typed[2] if typed else None)

    @v_args(meta=True)
    def currency(self, meta, c):
        return ("currency", unquote(str(c[0])), self._ts(c[0]))

    @v_args(meta=True)
    def grain(self, meta, c):
        return GrainDecl(tuple((str(t), self._ts(t)) for t in c), self._span(meta))

    @v_args(meta=True)
    def history(self, meta, c):
        return HistoryDecl(str(c[0]), self._ts(c[0]), self._span(meta))

    @v_args(meta=True)
    def ref(self, meta, c):
        doc = next((unquote(str(x)) for x in c[2:] if isinstance(x, Token)), "")
        binding = next((x for x in c if isinstance(x, Binding)), None)
        nullable = any(x == ("nullable",) for x in c)
        return RefDecl(str(c[0]), self._ts(c[0]), str(c[1]), self._ts(c[1]), doc, binding,
                       nullable, self._span(meta))

    @v_args(meta=True)
    def field(self, meta, c):
        type_name, type_args, type_span = c[1]
        doc = next((unquote(str(x)) for x in c[2:] if isinstance(x, Token)), "")
        binding = next((x for x in c if isinstance(x, Binding)), None)
        nullable = any(x == ("nullable",) for x in c)
        deprecated = next((x[1] for x in c if isinstance(x, tuple) and x[0] == "deprecated"),
                          None)
        currency = next(((x[1], x[2]) for x in c[2:] if isinstance(x, tuple) and x[0] == "currency"), None)
        return FieldDecl(str(c[0]), self._ts(c[0]), type_name, type_args, type_span, doc,
                         binding, nullable, deprecated, self._span(meta), currency=currency)

    @v_args(meta=True)
    def entity(self, meta, c):
        items = c[1:]
        return EntityDecl(
            name=str(c[0]), name_span=self._ts(c[0]),
            docs=tuple(x[1] for x in items if isinstance(x, tuple) and x[0] == "doc"),
            tables=tuple((x[1], x[2]) for x in items if isinstance(x, tuple) and x[0] == "table"),
            keys=tuple(x for x in items if isinstance(x, KeyDecl)),
            refs=tuple(x for x in items if isinstance(x, RefDecl)),
            fields=tuple(x for x in items if isinstance(x, FieldDecl)),
            deprecated=next((x[1] for x in items if isinstance(x, tuple) and x[0] == "deprecated"),
                            None),
            span=self._span(meta),
            grains=tuple(x for x in items if isinstance(x, GrainDecl)),
            histories=tuple(x for x in items if isinstance(x, HistoryDecl)),
        )

    # metric expressions
    @v_args(meta=True)
    def dotted(self, meta, c):
        return (str(c[0]), str(c[1]), self._span(meta))

    @v_args(meta=True)
    def column_ref(self, meta, c):
        entity, fld, span = c[0]
        return Expr("column", entity=entity, field=fld, span=span)

    @v_args(meta=True)
    def call(self, meta, c):
        return Expr("call", (_as_expr(c[1]),), text=str(c[0]), span=self._span(meta))

    def _binary(op):  # noqa: N805 - a small factory used at class creation
        @v_args(meta=True)
        def build(self, meta, c):
            return Expr(op, (_as_expr(c[0]), _as_expr(c[1])), span=self._span(meta))
        return build

    add, sub, mul, div = _binary("add"), _binary("sub"), _binary("mul"), _binary("div")

    @v_args(meta=True)
    def neg(self, meta, c):
        return Expr("neg", (_as_expr(c[0]),), span=self._span(meta))

    @v_args(meta=True)
    def metric(self, meta, c):
        doc = unquote(str(c[1])) if len(c) == 3 else ""
        expr = _as_expr(c[-1])
        return MetricDecl(str(c[0]), self._ts(c[0]), doc, expr, self._span(meta))

    @v_args(meta=True)
    def schema(self, meta, c):
        items = c[2:]
        return SchemaDecl(
            name=str(c[0]), version=int(c[1]),
            docs=tuple(x[1] for x in items if isinstance(x, tuple) and x[0] == "doc"),
            entities=tuple(x for x in items if isinstance(x, EntityDecl)),
            metrics=tuple(x for x in items if isinstance(x, MetricDecl)),
            span=self._span(meta),
            doc_spans=tuple(x[2] for x in items if isinstance(x, tuple) and x[0] == "doc"),
            currencies=tuple((x[1], x[2]) for x in items if isinstance(x, tuple) and x[0] == "currency"),
        )

    # ------------------------------------------------------------ workflows

    @v_args(meta=True)
    def ask(self, meta, c):
        return ("ask", Value("string", str(c[0]), self._ts(c[0])))

    @v_args(meta=True)
    def solution(self, meta, c):
        return ("solution", Value("string", str(c[0]), self._ts(c[0])))

    @v_args(meta=True)
    def param_range(self, meta, c):
        low = Value("number", str(c[1]), self._ts(c[1]))
        high = Value("number", str(c[2]), self._ts(c[2]))
        return ParamDecl(str(c[0]), self._ts(c[0]), "range", low=low, high=high,
                         span=self._span(meta))

    @v_args(meta=True)
    def param_column(self, meta, c):
        entity, fld, span = c[1]
        return ParamDecl(str(c[0]), self._ts(c[0]), "column", entity=entity, field=fld,
                         source_span=span, span=self._span(meta))

    @v_args(meta=True)
    def param_choice(self, meta, c):
        return ParamDecl(str(c[0]), self._ts(c[0]), "choice", choices=tuple(c[1:]),
                         span=self._span(meta))

    def use_item(self, c):
        return ("entity", str(c[0]), self._ts(c[0]))

    def use_metric(self, c):
        return ("metric", str(c[0]), self._ts(c[0]))

    def uses(self, c):
        return ("uses", tuple(c))

    @v_args(meta=True)
    def expect(self, meta, c):
        kind_tok = c[0]
        kind = "same_rows_as" if kind_tok.type == "SAME_ROWS_AS" else str(kind_tok)
        return ExpectDecl(kind, self._ts(kind_tok), tuple(c[1:]), self._span(meta))

    @v_args(meta=True)
    def check(self, meta, c):
        return ExpectDecl(str(c[0]), self._ts(c[0]), tuple(c[1:]), self._span(meta), line="check")

    @v_args(meta=True)
    def turn(self, meta, c):
        asks = tuple(Value("string", str(t), self._ts(t)) for t in c if isinstance(t, Token))
        solution = next((x[1] for x in c if isinstance(x, tuple) and x[0] == "solution"), None)
        expects = tuple(x for x in c if isinstance(x, ExpectDecl))
        return TurnDecl(asks, solution, expects, self._span(meta))

    def _workflow(self, kind, meta, c) -> WorkflowDecl:
        items = c[1:]
        tagged = [x for x in items if isinstance(x, tuple)]
        uses = tuple(u for x in tagged if x[0] == "uses" for u in x[1])
        params = tuple(x for x in items if isinstance(x, ParamDecl))
        docs = tuple(x[1] for x in tagged if x[0] == "doc")
        span = self._span(meta)
        if kind == "workflow":
            asks = tuple(x[1] for x in tagged if x[0] == "ask")
            solutions = [x[1] for x in tagged if x[0] == "solution"]
            expects = tuple(x for x in items if isinstance(x, ExpectDecl))
            turns = (TurnDecl(asks, solutions[0] if solutions else None, expects, span),)
            extra = tuple(TurnDecl((), s, (), s.span) for s in solutions[1:])
            turns = turns + extra
        else:
            turns = tuple(x for x in items if isinstance(x, TurnDecl))
        return WorkflowDecl(kind, str(c[0]), self._ts(c[0]), docs, params, uses, turns, span)

    @v_args(meta=True)
    def workflow(self, meta, c):
        return self._workflow("workflow", meta, c)

    @v_args(meta=True)
    def conversation(self, meta, c):
        return self._workflow("conversation", meta, c)

    # ------------------------------------------------------------ recipes

    @v_args(meta=True)
    def uses_schema(self, meta, c):
        return ("uses_schema", Value("string", str(c[0]), self._ts(c[0])))

    @v_args(meta=True)
    def profile(self, meta, c):
        items = c[1:]
        base = next((x for x in items if isinstance(x, tuple) and x[0] == "extends"), None)
        return ProfileDecl(str(c[0]), self._ts(c[0]),
                           tuple(x for x in items if isinstance(x, Setting)),
                           tuple(x for x in items if isinstance(x, Block)), self._span(meta),
                           extends=str(base[1]) if base else None, extends_span=self._ts(base[1]) if base else None)

    def profile_base(self, c):
        return ("extends", c[0])

    @v_args(meta=True)
    def recipe(self, meta, c):
        items = c[1:]
        return RecipeDecl(
            name=str(c[0]), name_span=self._ts(c[0]),
            uses_schema=tuple(x[1] for x in items if isinstance(x, tuple) and x[0] == "uses_schema"),
            settings=tuple(x for x in items if isinstance(x, Setting)),
            workflows=tuple(x for x in items if isinstance(x, WorkflowDecl)),
            blocks=tuple(x for x in items if isinstance(x, Block)),
            profiles=tuple(x for x in items if isinstance(x, ProfileDecl)),
            span=self._span(meta),
        )

    def start(self, c):
        return SourceFile(self.file, tuple(x for x in c if isinstance(x, SchemaDecl)),
                          tuple(x for x in c if isinstance(x, RecipeDecl)))
