"""The synthetic teacher's noise model: seeded, labelled corruptions of a clean turn.

Each kind imitates a real teacher failure and is built to be caught by one gate of
the Tri-Gate filter (`INTENDED_GATE`); the funnel's confusion table shows whether it
was. A corruption that does not apply to a solution (no SQL aggregate to swap, say)
returns ``None`` and the model picks another kind.

| kind | what changes | meant for |
| --- | --- | --- |
| wrong_column | an SQL column renamed to one no view has | execution (binder error) |
| misplaced_field | a field read through the alias of another joined view, one that lacks it (`a.cost` for `s.cost`) | execution (binder error) |
| runtime_error | the code reads a param that does not exist | execution |
| syntax_error | a closing parenthesis dropped | execution |
| endless_loop | a paging loop that never ends | execution (timeout) |
| wrong_filter | a WHERE comparison inverted | output (mismatch) |
| missing_filter | one WHERE condition dropped | output (mismatch) |
| wrong_metric | an aggregate swapped (sum -> avg, ...) | output (mismatch) |
| empty_result | the result filtered to nothing | output (empty) |
| truncated_block | the text cut off mid-block | output (incomplete) |
| plan_metric_mismatch | the PLAN names a metric the code does not compute | judge (plan_code) |
| ddl_leak | physical names or SQL keywords in the PLAN | judge (no_ddl_leak) |
| params_ignored | the code uses another value than the one asked | judge (prompt_params) |

``params_ignored`` changes the result too, so with the default gate order the
output gate usually rejects it first; the judge is its backstop (the confusion
table's "would catch" columns show both).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from sqlglot import exp

from craftc.ir import DEFAULT_NOISE_KINDS   # what the teacher draws from when a recipe does not say
from craftc.sql_facts import parse_sql
from runtime.distill.code_facts import code_facts, sql_strings
from runtime.distill.vocabulary import SchemaVocabulary, mentions

__all__ = ["NOISE_KINDS", "DEFAULT_NOISE_KINDS", "INTENDED_GATE", "NoiseContext", "Turn3", "corrupt"]

INTENDED_GATE = {
    "wrong_column": "execution",
    "misplaced_field": "execution",
    "runtime_error": "execution",
    "syntax_error": "execution",
    "endless_loop": "execution",
    "wrong_filter": "output",
    "missing_filter": "output",
    "wrong_metric": "output",
    "empty_result": "output",
    "truncated_block": "output",
    "plan_metric_mismatch": "judge",
    "ddl_leak": "judge",
    "params_ignored": "judge",
}
NOISE_KINDS = tuple(INTENDED_GATE)


@dataclass(frozen=True)
class Turn3:
    """A working turn's three blocks; ``raw`` overrides the formatted text (truncation)."""

    think: str
    plan: str
    code: str
    raw: str | None = None


@dataclass(frozen=True)
class NoiseContext:
    vocab: SchemaVocabulary
    params: dict[str, Any]
    alternatives: dict[str, list[Any]]     # other values each param takes in this workflow
    format_text: Callable[[Turn3], str]
    fields: dict[str, frozenset[str]] = field(default_factory=dict)   # each logical view's fields


def _compiles(code: str) -> bool:
    try:
        compile(code, "<candidate>", "exec")
    except SyntaxError:
        return False
    return True


def _rewrite_sql(code: str, rewrite: Callable[[str], str | None]) -> str | None:
    """Apply ``rewrite`` to the first SQL literal it changes; keep the literal's quotes."""
    for literal in sql_strings(code):
        source = code[literal.start:literal.end]
        changed = rewrite(source)
        if changed is not None and changed != source:
            return code[:literal.start] + changed + code[literal.end:]
    return None


# ------------------------------------------------------------- execution gate


def _wrong_column(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    facts = code_facts(turn.code)
    columns = sorted(c for c in facts.columns if c in ctx.vocab.logical and c not in facts.tables)
    if not columns:
        return None
    column = rng.choice(columns)
    wrong = rng.choice([f"{column}_count", f"total_{column}", f"{column}_value"])
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(column)}(?![A-Za-z0-9_])")
    code = _rewrite_sql(turn.code, lambda sql: pattern.sub(wrong, sql))
    return Turn3(turn.think, turn.plan, code) if code else None


def _misplaced_field(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    """``a.cost`` where the query reads ``s.cost``: the field is right, the joined view is not
    (a slip SmolLM2 makes on dev: an unknown field of the view its alias names)."""
    for literal in sql_strings(turn.code):
        tree = parse_sql(literal.sql)
        moves = sorted(_field_moves(tree, ctx.fields)) if tree is not None else []
        if not moves:
            continue
        alias, name, other = rng.choice(moves)
        source = turn.code[literal.start:literal.end]
        pattern = re.compile(rf"(?<![A-Za-z0-9_.]){re.escape(alias)}\.{re.escape(name)}(?![A-Za-z0-9_])")
        changed = pattern.sub(f"{other}.{name}", source, count=1)
        if changed != source:
            return Turn3(turn.think, turn.plan, turn.code[:literal.start] + changed + turn.code[literal.end:])
    return None


def _field_moves(tree: exp.Expression, fields: dict[str, frozenset[str]]) -> set[tuple[str, str, str]]:
    """``(alias, field, other alias)``: ``alias.field`` reads a real field, and the view behind
    ``other`` lacks it. Within one SELECT and outside JOIN conditions, so the moved name is
    visible where it stands and the error is the unknown field, not an alias out of scope."""
    moves = set()
    for column in tree.find_all(exp.Column):
        if not column.table or column.find_ancestor(exp.Join):
            continue
        views = _views_in_scope(column)
        if column.name not in fields.get(views.get(column.table), ()):
            continue
        moves |= {(column.table, column.name, other) for other, view in views.items()
                  if other != column.table and view in fields and column.name not in fields[view]}
    return moves


def _views_in_scope(column: exp.Column) -> dict[str, str]:
    """The tables of the SELECT ``column`` stands in, by the name its columns use."""
    scope = column.find_ancestor(exp.Select)
    return {t.alias_or_name: t.name for t in (scope.find_all(exp.Table) if scope else ())
            if t.find_ancestor(exp.Select) is scope}


def _runtime_error(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    key = rng.choice(["limit", "top_k", "window_days", "min_spend"])
    return Turn3(turn.think, turn.plan, f"cutoff = params[{key!r}]\n{turn.code}")


def _syntax_error(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    index = turn.code.rfind(")")
    if index >= 0:
        code = turn.code[:index] + turn.code[index + 1:]
        if not _compiles(code):
            return Turn3(turn.think, turn.plan, code)
    return Turn3(turn.think, turn.plan, turn.code.rstrip() + "\nresult = result.sort_values(by=[\n")


def _endless_loop(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    loop = ("offset, done = 0, False\n"
            "while not done:  # page through the rows\n"
            "    offset += 1000\n")
    return Turn3(turn.think, turn.plan, loop + turn.code)


# ------------------------------------------------------------- output gate

_INVERT = {">=": "<", "<=": ">", ">": "<=", "<": ">=", "=": "<>", "<>": "=", "!=": "="}
_COMPARISON = re.compile(r"(?<![<>!=])(>=|<=|<>|!=|=|>|<)(?![<>=])")


def _wrong_filter(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    def invert(sql: str) -> str | None:
        where = re.search(r"\bWHERE\b", sql, re.I)
        if not where:
            return None
        tail_end = re.search(r"\b(GROUP|ORDER|LIMIT|HAVING|QUALIFY|WINDOW)\b", sql[where.end():], re.I)
        stop = where.end() + (tail_end.start() if tail_end else len(sql) - where.end())
        match = _COMPARISON.search(sql, where.end(), stop)
        if not match:
            return None
        return sql[:match.start()] + _INVERT[match.group(1)] + sql[match.end():]

    code = _rewrite_sql(turn.code, invert)
    return Turn3(turn.think, turn.plan, code) if code else None


def _missing_filter(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    for literal in sql_strings(turn.code):
        tree = parse_sql(literal.sql)
        if tree is None:
            continue
        tree = tree.copy()          # parsed trees are shared; this one is edited below
        where = tree.find(exp.Where)
        if where is None:
            continue
        # Conditions bound to `?` placeholders stay: dropping one would break the
        # argument count, an execution error rather than the silent wrong answer wanted.
        conditions = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
        droppable = [c for c in conditions if not c.find(exp.Placeholder)]
        if not droppable:
            continue
        dropped = rng.choice(droppable)
        kept = [c for c in conditions if c is not dropped]
        if kept:
            where.set("this", exp.and_(*kept))
        else:
            where.pop()
        source = turn.code[literal.start:literal.end]
        quote = '"""' if source.startswith('"""') else ("'''" if source.startswith("'''") else None)
        if quote is None or source.startswith(("f", "r")):
            continue  # only plain triple-quoted literals can take regenerated SQL safely
        new = quote + tree.sql(dialect="duckdb", pretty=True) + quote
        return Turn3(turn.think, turn.plan, turn.code[:literal.start] + new + turn.code[literal.end:])
    return None


_AGGREGATE_SWAPS = [(r"\bsum\(", "avg("), (r"\bavg\(", "max("), (r"\bcount\(\s*distinct\s+", "count("),
                    (r"\bcount\(", "sum(1+"), (r"\bmax\(", "min("), (r"\bmin\(", "max(")]


def _wrong_metric(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    swaps = list(_AGGREGATE_SWAPS)
    rng.shuffle(swaps)
    for pattern, replacement in swaps:
        regex = re.compile(pattern, re.I)
        code = _rewrite_sql(turn.code, lambda sql: regex.sub(replacement, sql, count=1) if regex.search(sql) else None)
        if code:
            return Turn3(turn.think, turn.plan, code)
    for method, other in ((".sum()", ".mean()"), (".mean()", ".max()")):
        if method in turn.code:
            return Turn3(turn.think, turn.plan, turn.code.replace(method, other, 1))
    return None


def _empty_result(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    return Turn3(turn.think, turn.plan, turn.code.rstrip() + "\nresult = result.head(0)\n")


def _truncated_block(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    text = ctx.format_text(turn)
    lines = turn.code.rstrip("\n").split("\n")
    # Cut the code at a statement boundary before `result` is assigned, so the part
    # that did arrive still runs: the failure is the missing end, not the syntax.
    prefixes = [k for k in range(1, len(lines))
                if _compiles("\n".join(lines[:k])) and "result" not in "\n".join(lines[:k])]
    if prefixes and rng.random() < 0.5:
        cut = "\n".join(lines[:rng.choice(prefixes)])
        head = text[: text.index(turn.code.strip()[:20])] if turn.code.strip()[:20] in text else None
        if head is not None:
            return Turn3(turn.think, turn.plan, cut, raw=head + cut + "\n")
    plan_at = text.find(turn.plan[: max(1, len(turn.plan) // 2)])
    if plan_at < 0:
        return None
    return Turn3(turn.think, turn.plan, "", raw=text[: plan_at + max(1, len(turn.plan) // 2)])


# ------------------------------------------------------------- judge gate


def _plan_metric_mismatch(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    facts = code_facts(turn.code)
    touched = facts.columns | facts.identifiers
    foreign = [m for m in ctx.vocab.metrics.values()
               if not set(m.fields) <= touched and not any(mentions(turn.plan, p) for p in m.phrases)]
    if not foreign:
        return None
    metric = rng.choice(sorted(foreign, key=lambda m: m.name))
    phrase = max(metric.phrases, key=len)
    named = ctx.vocab.metrics_named(turn.plan)
    if named:
        words = ctx.vocab.metrics[named[0]]
        plan = turn.plan
        for own in sorted(words.phrases, key=len, reverse=True):
            plan = re.sub(re.escape(own), phrase, plan, flags=re.I)
        if plan != turn.plan:
            return Turn3(turn.think, plan, turn.code)
    return Turn3(turn.think, turn.plan.rstrip() + f"\nReport the {phrase} of each row as well.", turn.code)


def _ddl_leak(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    if ctx.vocab.physical and rng.random() < 0.6:
        name = rng.choice(list(ctx.vocab.physical))
        leak = f"Read the rows straight from `{name}` in the warehouse."
    else:
        facts = code_facts(turn.code)
        table = sorted(facts.tables)[0] if facts.tables else "the stats table"
        leak = f"Run SELECT * FROM {table} and filter the rows."
    return Turn3(turn.think, turn.plan.rstrip() + "\n" + leak, turn.code)


def _params_ignored(turn: Turn3, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    names = sorted(ctx.params)
    rng.shuffle(names)
    for name in names:
        value = ctx.params[name]
        others = [v for v in ctx.alternatives.get(name, []) if v != value and repr(v) not in turn.code]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not others:
            others = [value + step for step in (1, 2, 3) if repr(value + step) not in turn.code]
        if not others:
            continue
        other = rng.choice(others)
        for old in (f"params[{name!r}]", f'params["{name}"]', repr(value)):
            if old in turn.code:
                return Turn3(turn.think, turn.plan, turn.code.replace(old, repr(other)))
    return None


_CORRUPTIONS: dict[str, Callable[[Turn3, NoiseContext, random.Random], Turn3 | None]] = {
    "wrong_column": _wrong_column,
    "misplaced_field": _misplaced_field,
    "runtime_error": _runtime_error,
    "syntax_error": _syntax_error,
    "endless_loop": _endless_loop,
    "wrong_filter": _wrong_filter,
    "missing_filter": _missing_filter,
    "wrong_metric": _wrong_metric,
    "empty_result": _empty_result,
    "truncated_block": _truncated_block,
    "plan_metric_mismatch": _plan_metric_mismatch,
    "ddl_leak": _ddl_leak,
    "params_ignored": _params_ignored,
}


def corrupt(turn: Turn3, kind: str, ctx: NoiseContext, rng: random.Random) -> Turn3 | None:
    """Apply one noise kind; ``None`` when it does not apply to this turn."""
    return _CORRUPTIONS[kind](turn, ctx, rng)
