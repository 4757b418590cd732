"""Lowering: syntax tree -> IR, with every default resolved and spans attached.

Lowering is lenient: a bad setting or unknown type is reported to the sink and left
out (so the IR default applies), and lowering carries on so that every problem is
reported in one run. Name and reference checks live in :mod:`craftc.check`; the
frontend only hands out a Recipe when no error was reported.
"""

from __future__ import annotations

import posixpath

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from craftc.setting_keys import BLOCK_KEYS
from craftc.settings import merge_settings, resolve_settings
from craftc.trl_block import lower_trl_block
from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.result_checks import lower_check
from craftc.ir import (
    BUILTIN_JUDGES, GATE_ORDER, JUDGE_KINDS, KEY_KINDS, STAGE_KINDS, STAGE_MODELS, TEACHER_KINDS, TOOL_KINDS,
    BlockFormat, Entity, EntityField, EntityHistory, EntityKey, EntityRef, EvalSpec, ExecutionGate,
    Expectation, FieldType, Gates, Judge, JudgeGate, LoraAdapter, Metric, ModelSpec, OutputGate, Param,
    Recipe, Reward, ScalarKind, Schema, Span, StageBase, Teacher, Tool, Turn, Workflow,
)
from craftc.syntax import (
    Block, EntityDecl, ExpectDecl, Expr, MetricDecl, ParamDecl, ProfileDecl, RecipeDecl,
    SchemaDecl, Setting, Value, WorkflowDecl,
)

__all__ = [
    "snake_case", "lower_schema", "lower_recipe", "apply_profile", "apply_profiles", "profile_chain", "LoweringContext",
    "render_expr", "lower_expectation", "lower_expect_line", "SCALAR_TYPES", "GATE_ORDER", "BUILTIN_JUDGES", "DEFAULT_TOOLS",
]

SCALAR_TYPES: tuple[str, ...] = get_args(ScalarKind)
DEFAULT_TOOLS = TOOL_KINDS
# The base a stage trains when it names none: the embedded model, with the IR's shape.
DEFAULT_BASE: str = StageBase.model_fields["base"].default
TINY_MOE = ModelSpec(name=DEFAULT_BASE)


def snake_case(name: str) -> str:
    """The logical view name of an entity.

    Example:
        >>> snake_case("DailyStat"), snake_case("GeoIPRange"), snake_case("ad_group")
        ('daily_stat', 'geo_ip_range', 'ad_group')
    """
    name = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name)
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return name.lower()


# ---------------------------------------------------------------- schema


def lower_schema(decl: SchemaDecl, source: str) -> Schema:
    """Schema IR of a schema declaration; problems are the schema checker's to report."""
    views = {e.name: snake_case(e.name) for e in decl.entities}
    entities = tuple(_lower_entity(e) for e in decl.entities)
    metrics = tuple(_lower_metric(m, views) for m in decl.metrics)
    return Schema(name=decl.name, version=decl.version, doc="\n".join(decl.docs),
                  source=source, entities=entities, metrics=metrics,
                  currency=decl.currencies[0][0] if decl.currencies else None, span=decl.span)


def _lower_entity(e: EntityDecl) -> Entity:
    view = snake_case(e.name)
    if e.keys:
        k = e.keys[0]
        key = EntityKey(name=k.name, column=k.binding.column if k.binding else k.name,
                        type=k.type_name if k.type_name in KEY_KINDS else "int", span=k.span)
    elif e.grains:
        key = None
    else:
        key = EntityKey(name="id", column="id", span=e.span)
    fields = tuple(
        EntityField(
            name=f.name,
            type=FieldType(kind=f.type_name if f.type_name in SCALAR_TYPES else "string",
                           values=f.type_args if f.type_name == "enum" else (),
                           span=f.type_span),
            doc=f.doc, column=f.binding.column if f.binding else f.name,
            scale=f.binding.scale if f.binding else None, nullable=f.nullable,
            deprecated=f.deprecated, currency=f.currency[0] if f.currency else None, span=f.span)
        for f in e.fields)
    refs = tuple(
        EntityRef(name=r.name, target=r.target,
                  column=r.binding.column if r.binding else f"{r.name}_id",
                  doc=r.doc, nullable=r.nullable, span=r.span)
        for r in e.refs)
    table = e.tables[0][0] if e.tables else view
    ref_names = {r.name for r in e.refs}
    grain = tuple(f"{m}_id" if m in ref_names else m for m, _ in e.grains[0].members) \
        if e.grains and not e.keys else ()
    history = EntityHistory(version=e.histories[0].version, view=f"{view}_history",
                            span=e.histories[0].span) if e.histories else None
    return Entity(name=e.name, doc="\n".join(e.docs), table=table, view=view, key=key,
                  fields=fields, refs=refs, deprecated=e.deprecated, grain=grain, history=history,
                  span=e.span)


_PRECEDENCE = {"add": 1, "sub": 1, "mul": 2, "div": 2}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def render_expr(expr: Expr, column) -> str:
    """Text of a metric expression; ``column(entity, field)`` spells column references."""
    if expr.op == "number":
        return expr.text
    if expr.op == "column":
        return column(expr.entity, expr.field)
    if expr.op == "call":
        inner = render_expr(expr.args[0], column)
        if expr.text == "count_distinct" and column is not _logical_column:
            return f"count(DISTINCT {inner})"
        return f"{expr.text}({inner})"
    if expr.op == "neg":
        return f"-{_wrap(expr.args[0], 3, column)}"
    level = _PRECEDENCE[expr.op]
    left = _wrap(expr.args[0], level, column)
    # Right operands of - and / keep parentheses at equal precedence: a - (b - c).
    right = _wrap(expr.args[1], level + (expr.op in ("sub", "div")), column)
    return f"{left} {_SYMBOL[expr.op]} {right}"


def _wrap(expr: Expr, level: int, column) -> str:
    text = render_expr(expr, column)
    if _PRECEDENCE.get(expr.op, 9) < level:
        return f"({text})"
    return text


def _logical_column(entity: str, field: str) -> str:
    return f"{entity}.{field}"


def expr_columns(expr: Expr) -> list[Expr]:
    """Every column reference of an expression, in reading order."""
    if expr.op == "column":
        return [expr]
    return [c for arg in expr.args for c in expr_columns(arg)]


def _lower_metric(m: MetricDecl, views: dict[str, str]) -> Metric:
    entities: list[str] = []
    for col in expr_columns(m.expr):
        if col.entity not in entities:
            entities.append(col.entity)
    sql = render_expr(m.expr, lambda e, f: f"{views.get(e, snake_case(e))}.{f}")
    return Metric(name=m.name, doc=m.doc, expr=render_expr(m.expr, _logical_column), sql=sql,
                  entities=tuple(entities), span=m.span)


# ---------------------------------------------------------------- recipes


@dataclass
class LoweringContext:
    """What lowering a recipe needs besides the syntax: where files are and the schema."""

    recipe_dir: Path                      # directory of the file that declares the recipe
    root: Path                            # compile root: spans are relative to it
    schema: Schema
    profile: str | None = None
    solution_sources: dict[str, Path] = field(default_factory=dict)
    # Workflows already lowered, by declaration (id -> (decl, IR, its solution sources)).
    # Profiles never change a workflow, so the front end shares this between the
    # contexts of one recipe's variants and each workflow is lowered once, not once per
    # profile.
    lowered_workflows: dict[int, tuple[WorkflowDecl, Workflow, dict[str, Path]]] = field(default_factory=dict)


def apply_profile(decl: RecipeDecl, profile: ProfileDecl) -> RecipeDecl:
    """The recipe with one profile's settings and blocks merged in, key by key."""
    settings = merge_settings(decl.settings, profile.settings)
    blocks = list(decl.blocks)
    index = {_block_identity(b): i for i, b in enumerate(blocks)}
    for b in profile.blocks:
        i = index.get(_block_identity(b))
        if i is None:
            index[_block_identity(b)] = len(blocks)
            blocks.append(b)
        elif blocks[i].name != b.name:      # another teacher backend: a new block, not a merge
            blocks[i] = b
        else:
            old = blocks[i]
            blocks[i] = Block(old.kind, old.name, old.name_span,
                              merge_settings(old.settings, b.settings), old.span)
    return RecipeDecl(decl.name, decl.name_span, decl.uses_schema, settings, decl.workflows,
                      tuple(blocks), decl.profiles, decl.span)


def profile_chain(profiles: dict[str, ProfileDecl], name: str) -> tuple[ProfileDecl, ...]:
    """The profiles that ``profile NAME`` applies, its furthest base first and itself last.

    ``profile b extends a`` is ``a``'s settings and blocks, then ``b``'s. The chain stops
    at a base that is not declared or already in it (check_profiles reports both), so a
    broken ``extends`` never loops.
    """
    chain: list[ProfileDecl] = []
    current = profiles.get(name)
    while current is not None and all(current.name != p.name for p in chain):
        chain.append(current)
        current = profiles.get(current.extends) if current.extends else None
    return tuple(reversed(chain))


def apply_profiles(decl: RecipeDecl, chain: tuple[ProfileDecl, ...]) -> RecipeDecl:
    """The recipe with each profile of ``chain`` merged in, in order (see profile_chain)."""
    for profile in chain:
        decl = apply_profile(decl, profile)
    return decl


SINGLETON_BLOCKS = ("teacher", "reward", "eval", "format")


def _block_identity(b: Block) -> tuple[str, str | None]:
    """Blocks a profile overrides are matched by kind (singletons) or kind and name."""
    return (b.kind, None) if b.kind in SINGLETON_BLOCKS else (b.kind, b.name)


def head_span(b: Block) -> Span:
    """The span of a block's keyword (``eval``), for diagnostics about the whole block."""
    return Span(file=b.span.file, line=b.span.line, col=b.span.col, end_line=b.span.line,
                end_col=b.span.col + len(b.kind))


def lower_recipe(decl: RecipeDecl, ctx: LoweringContext, sink: DiagnosticSink) -> Recipe:
    """Recipe IR; every problem found on the way goes to ``sink``."""
    top = resolve_settings("recipe", decl.settings, sink, f"recipe {decl.name}")
    if top.get("warehouse") and not posixpath.isabs(top["warehouse"]):
        top["warehouse"] = posixpath.normpath(top["warehouse"])    # relative to the recipe file
    blocks = _blocks_by_kind(decl.blocks)
    models = _lower_models(blocks.get("model", []), ctx, sink)
    stages = _inherit_bases(tuple(_lower_stage(b, models, ctx, sink) for b in blocks.get("stage", [])),
                            blocks.get("stage", []))
    used_models = _models_in_use(models, stages)
    return Recipe(
        name=decl.name, profile=ctx.profile or "default",
        profiles=tuple(p.name for p in decl.profiles), **top,
        schema=ctx.schema,
        workflows=tuple(_lower_workflow(w, ctx) for w in decl.workflows),
        tools=_lower_tools(blocks.get("tool", []), sink),
        format=_lower_format(blocks.get("format", []), sink),
        teacher=_lower_teacher(blocks.get("teacher", []), sink),
        judges=tuple(_lower_judge(b, sink) for b in blocks.get("judge", [])),
        gates=_lower_gates(blocks.get("gate", []), sink),
        reward=_lower_reward(blocks.get("reward", []), sink),
        models=used_models, stages=tuple(s for s in stages if s is not None),
        eval=_lower_eval(blocks.get("eval", []), sink),
        span=decl.span,
    )


def _blocks_by_kind(blocks: tuple[Block, ...]) -> dict[str, list[Block]]:
    out: dict[str, list[Block]] = {}
    for b in blocks:
        out.setdefault(b.kind, []).append(b)
    return out


def _label(b: Block) -> str:
    return f"{b.kind} {b.name}" if b.name else b.kind


# ------------------------------------------------------------ workflows


def _lower_workflow(w: WorkflowDecl, ctx: LoweringContext) -> Workflow:
    done = ctx.lowered_workflows.get(id(w))
    if done is not None and done[0] is w:
        ctx.solution_sources.update(done[2])
        return done[1]
    turns, sources = [], {}
    # Extra `solution` lines of a single-turn workflow are reported by the checker (E306).
    decl_turns = w.turns[:1] if w.kind == "workflow" else w.turns
    for n, t in enumerate(decl_turns, start=1):
        plan_path = None
        if t.solution is not None:
            plan_path = f"solutions/{w.name}/{n}.py"
            sources[plan_path] = (ctx.recipe_dir / t.solution.python).resolve()
        turns.append(Turn(asks=tuple(a.python for a in t.asks), solution=plan_path,
                          expectations=tuple(e for e in map(lower_expect_line, t.expects) if e),
                          span=t.span))
    workflow = Workflow(
        name=w.name, kind=w.kind, doc="\n".join(w.docs),
        params=tuple(_lower_param(p) for p in w.params),
        entities=tuple(dict.fromkeys(n for k, n, _ in w.uses if k == "entity")),
        metrics=tuple(dict.fromkeys(n for k, n, _ in w.uses if k == "metric")),
        turns=tuple(turns), span=w.span,
    )
    ctx.solution_sources.update(sources)
    ctx.lowered_workflows[id(w)] = (w, workflow, sources)
    return workflow


def _lower_param(p: ParamDecl) -> Param:
    if p.kind == "range":
        low, high = p.low.python, p.high.python
        return Param(name=p.name, kind="range", low=float(low), high=float(high),
                     integer=isinstance(low, int) and isinstance(high, int), span=p.span)
    if p.kind == "column":
        return Param(name=p.name, kind="column", entity=p.entity, field=p.field, span=p.span)
    return Param(name=p.name, kind="choice", values=tuple(v.python for v in p.choices),
                 span=p.span)


EXPECT_KINDS = ("same_rows", "same_rows_as", "columns", "min_rows", "max_rows", "nonempty")


def lower_expect_line(e: ExpectDecl) -> Expectation | None:
    """IR of an ``expect`` or a ``check`` line, or None when it is malformed."""
    return lower_check(e) if e.line == "check" else lower_expectation(e)


def lower_expectation(e: ExpectDecl) -> Expectation | None:
    """IR of an ``expect`` line, or None when it is malformed (the checker says why)."""
    args = list(e.args)
    if e.kind in ("same_rows", "same_rows_as"):
        opts: dict[str, Any] = {}
        while args:
            a = args.pop(0)
            if isinstance(a, Value) and a.text == "ordered":
                opts["ordered"] = True
            elif isinstance(a, Value) and a.text == "tolerance" and args \
                    and isinstance(args[0], Value) and args[0].kind == "number":
                opts["tolerance"] = float(args.pop(0).python)
            else:
                return None
        return Expectation(kind="same_rows_as_solution", span=e.span, **opts)
    if e.kind == "columns" and len(args) == 1 and isinstance(args[0], tuple):
        return Expectation(kind="columns", columns=args[0], span=e.span)
    if e.kind in ("min_rows", "max_rows") and len(args) == 1 and isinstance(args[0], Value) \
            and args[0].kind == "number" and isinstance(args[0].python, int) \
            and args[0].python >= 0:
        return Expectation(kind="row_count", span=e.span, **{e.kind: args[0].python})
    if e.kind == "nonempty" and not args:
        return Expectation(kind="nonempty", span=e.span)
    return None


# ------------------------------------------------------------ distillation blocks


def _lower_tools(blocks: list[Block], sink: DiagnosticSink) -> tuple[Tool, ...]:
    if not blocks:
        return tuple(Tool(name=k, kind=k) for k in DEFAULT_TOOLS)
    tools = []
    for b in blocks:
        values = resolve_settings("tool", b.settings, sink, _label(b))
        kind = values.pop("kind", b.name if b.name in DEFAULT_TOOLS else None)
        if kind is None:
            sink.error("E204", f"tool `{b.name}` has no kind", b.name_span,
                       f"add `kind run_code` (one of {', '.join(DEFAULT_TOOLS)})")
            continue
        tools.append(Tool(name=b.name, kind=kind, span=b.span, **values))
    return tuple(tools)


def _lower_format(blocks: list[Block], sink: DiagnosticSink) -> BlockFormat:
    if not blocks:
        return BlockFormat()
    values = resolve_settings("format", blocks[-1].settings, sink, "format")
    return BlockFormat(span=blocks[-1].span, **values)


def _lower_teacher(blocks: list[Block], sink: DiagnosticSink) -> Teacher:
    if not blocks:
        return Teacher()
    b = blocks[-1]
    values = resolve_settings("teacher", b.settings, sink, _label(b))
    if b.name is not None and b.name not in TEACHER_KINDS:
        guess = did_you_mean(b.name, TEACHER_KINDS)
        sink.error("E407", f"unknown teacher kind `{b.name}`", b.name_span,
                   f"did you mean `{guess}`?" if guess else f"one of {', '.join(TEACHER_KINDS)}")
    elif b.name is not None:
        values["kind"] = b.name
    return Teacher(span=b.span, **values)


def _lower_judge(b: Block, sink: DiagnosticSink) -> Judge:
    values = resolve_settings("judge", b.settings, sink, _label(b))
    kind = values.pop("kind", b.name if b.name in JUDGE_KINDS else None)
    if kind is None:
        sink.error("E407", f"judge `{b.name}` has no known kind", b.name_span,
                   f"add `kind llm` (one of {', '.join(JUDGE_KINDS)})")
        kind = "llm"
    backend_block = values.pop("backend", None)
    backend = None
    if backend_block is not None:
        opts = resolve_settings("backend", backend_block.settings, sink, f"{_label(b)} backend")
        backend = Teacher(span=backend_block.span, **opts)
    if kind == "llm" and backend is None:
        sink.error("E408", f"llm judge `{b.name}` has no backend", b.name_span,
                   'add `backend { kind openai  model "..."  base_url env("JUDGE_URL") }`')
    return Judge(name=b.name, kind=kind, backend=backend, span=b.span, **values)


def _lower_gates(blocks: list[Block], sink: DiagnosticSink) -> Gates:
    gates: dict[str, Any] = {}
    for b in blocks:
        if b.name not in GATE_ORDER:
            continue   # reported by the gates checker (E401)
        values = resolve_settings(f"gate.{b.name}", b.settings, sink, _label(b))
        if b.name == "execution":
            reject = values.pop("reject", None)
            if isinstance(reject, dict):
                values.update(reject)
            gates["execution"] = ExecutionGate(span=b.span, **values)
        elif b.name == "output":
            gates["output"] = OutputGate(span=b.span, **values)
        else:
            gates["judge"] = JudgeGate(span=b.span, **values)
    return Gates(**gates)


def _lower_reward(blocks: list[Block], sink: DiagnosticSink) -> Reward:
    if not blocks:
        return Reward()
    b = blocks[-1]
    values = resolve_settings("reward", b.settings, sink, "reward")
    penalties = values.pop("penalties", None)
    if penalties is not None:
        pairs = []
        for s in penalties.settings:
            if s.block is not None or len(s.values) != 1 or s.values[0].kind != "number":
                sink.error("E202", f"penalty `{s.key}` takes one number", s.key_span,
                           f"write `{s.key} 0.1`")
                continue
            pairs.append((s.key, float(s.values[0].python)))
        values["penalties"] = tuple(pairs)
    if values.get("aggregate") not in (None, *BLOCK_KEYS["reward"]["aggregate"].choices):
        values.pop("aggregate")   # reported by the reward checker (E405)
    return Reward(span=b.span, **values)


# ------------------------------------------------------------ training


def _lower_models(blocks: list[Block], ctx: LoweringContext,
                  sink: DiagnosticSink) -> dict[str, ModelSpec]:
    models: dict[str, ModelSpec] = {}
    for b in blocks:
        values = resolve_settings("model", b.settings, sink, _label(b))
        if "source" not in values and "path" in values:
            values["source"] = _path_source(values["path"], ctx)
        models.setdefault(b.name, ModelSpec(name=b.name, span=b.span, **values))
    return models


def _path_source(path: str, ctx: LoweringContext) -> str:
    if path.endswith(".gguf"):
        return "gguf"
    if path.startswith((".", "/")) or (ctx.recipe_dir / path).exists():
        return "path"
    return "hub"


def _lower_stage(b: Block, models: dict[str, ModelSpec], ctx: LoweringContext,
                 sink: DiagnosticSink) -> StageBase | None:
    values = resolve_settings("stage", b.settings, sink, _label(b))
    kind = values.pop("kind", b.name if b.name in STAGE_KINDS else None)
    if kind is None:
        sink.error("E509", f"stage `{b.name}` has no kind", b.name_span,
                   f"name the stage {' or '.join(f'`{k}`' for k in STAGE_KINDS)}, or add "
                   f"{' / '.join(f'`kind {k}`' for k in STAGE_KINDS)}")
        return None
    model = STAGE_MODELS[kind]
    for s in b.settings:
        key = BLOCK_KEYS["stage"].get(s.key)
        if key is not None and (key.field or s.key) not in model.model_fields:
            owners = [k for k, m in STAGE_MODELS.items() if (key.field or s.key) in m.model_fields]
            sink.error("E213", f"`{s.key}` is a {'/'.join(owners)}-only setting and `{_label(b)}` "
                       f"is of kind {kind}", s.key_span,
                       f"remove `{s.key}` here, or set it on the {'/'.join(owners)} stage")
    # Drops what E213 reported (`rollout` fills `vllm_mode` too).
    values = {k: v for k, v in values.items() if k in model.model_fields}
    values["base"] = _stage_base(values.pop("base", None), models, ctx, sink)
    if "trl" in values:
        values["trl"] = lower_trl_block(kind, values["trl"], sink, _label(b))
    if "lora" in values:
        block = values["lora"]
        values["lora"] = LoraAdapter(**resolve_settings("lora", block.settings, sink, f"{_label(b)} lora"),
                                     span=block.span)
    return model(name=b.name, span=b.span, **values)


def _inherit_bases(stages: tuple, blocks: list[Block]) -> tuple:
    """A stage that starts `from` another and names no base of its own has that stage's base.

    Without this a grpo stage would list the embedded tiny_moe as its model while it
    really continues from the sft stage's checkpoint of a different model.
    """
    by_name = {s.name: s for s in stages if s is not None}
    explicit = {b.name for b in blocks if any(st.key == "base" for st in b.settings)}
    out = []
    for stage in stages:
        seen = set()
        current = stage
        while (current is not None and current.name not in explicit and current.after
               and current.after in by_name and current.after not in seen):
            seen.add(current.after)
            current = by_name[current.after]
        if stage is not None and current is not None and current is not stage:
            stage = stage.model_copy(update={"base": current.base})
        out.append(stage)
    return tuple(out)


def _stage_base(base: Value | None, models: dict[str, ModelSpec], ctx: LoweringContext,
                sink: DiagnosticSink) -> str:
    if base is None:
        return DEFAULT_BASE
    if base.kind == "string":
        name = base.python
        models.setdefault(name, ModelSpec(name=name, source=_path_source(name, ctx), path=name,
                                          span=base.span))
        return name
    if base.text not in models and base.text != DEFAULT_BASE:
        guess = did_you_mean(base.text, [*models, DEFAULT_BASE])
        sink.error("E108", f"unknown model `{base.text}`", base.span,
                   f"did you mean `{guess}`?" if guess else
                   'declare `model NAME { ... }`, or use `tiny_moe` or "org/name"')
    return base.text


def _models_in_use(models: dict[str, ModelSpec], stages) -> tuple[ModelSpec, ...]:
    names = list(models)
    if any(s is not None and s.base == DEFAULT_BASE for s in stages) and DEFAULT_BASE not in models:
        names.append(DEFAULT_BASE)
    return tuple(models.get(n, TINY_MOE) for n in sorted(names))


def _lower_eval(blocks: list[Block], sink: DiagnosticSink) -> EvalSpec:
    if not blocks:
        return EvalSpec()
    b = blocks[-1]
    values = resolve_settings("eval", b.settings, sink, "eval")
    baseline = values.pop("baseline", None)
    if baseline == "none":
        arms = values.get("arms", EvalSpec().arms)
        values["arms"] = tuple(a for a in arms if a != "stuffed")
    elif baseline == "stuffed" and "stuffed" not in values.get("arms", ("stuffed",)):
        values["arms"] = (*values["arms"], "stuffed")
    holdout = values.get("holdout")
    if holdout is not None and not 0 < holdout < 1:
        values.pop("holdout")     # reported by the eval checker (E508)
    return EvalSpec(span=b.span, **values)


def setting_span(block: Block | None, key: str) -> Span | None:
    """Where ``key`` is set in a block (for checks on resolved values)."""
    if block is None:
        return None
    for s in block.settings:
        if s.key == key:
            return s.values[0].span if s.values else s.key_span
    return None


def find_setting(settings: tuple[Setting, ...], key: str) -> Setting | None:
    return next((s for s in settings if s.key == key), None)
