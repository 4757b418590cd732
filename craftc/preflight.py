"""`craftc check --preflight`: every reference solution through the gates, before any teacher.

It lives in the compiler (it renders the plan with the emitter) and drives the runtime's
world step, sandbox and Tri-Gate, the way `craftc run` does.

A run finds out late that a reference raises for some param values (the gate skips
those instance turns) or that a judge rejects the reference's own plan (every
candidate that follows it is rejected too): the workflow silently loses its training
data. The preflight builds the warehouse the way the world step does (into a
temporary directory), draws the same instances a run draws, runs each reference
solution, then passes each reference trajectory (its PLAN and CODE as one clean
three-block turn) through the output and judge gates exactly as the gate step would.
Each failure is a diagnostic at the turn's line in the recipe:

- E315: the reference raises (for any instance), or returns no rows for every instance
  of a turn (the workflow loses all of that turn's data);
- W317: the reference returns no rows for some instances (those are skipped; the
  workflow keeps the rest);
- E316: the reference trajectory is rejected by the output gate or a judge.

Before the references, the schema is measured on the same warehouse: each ref's
containment, each enum's values, each key's uniqueness (E320, W321, W322, W323 at the
spec's line; :func:`data_diagnostics`).

A turn with checks and no solution has no reference: the preflight draws its params on
the warehouse like any other (a param with no values is an error at its line) and sends
nothing of it through the gates.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import defaultdict
from pathlib import Path

from rich.console import Console

from craftc.diagnostics import Diagnostic, span_at

__all__ = ["preflight", "data_diagnostics"]

THINK = "Preflight: follow the reference plan and code."


def preflight(load, recipe_path: Path, console: Console | None = None,
              report: list[str] | None = None) -> list[Diagnostic]:
    """Diagnostics (E315, E316; E320, W321-W323 from the data) for a checked recipe's
    references and schema; ``load`` is its LoadResult. ``report`` receives one line per key,
    ref and enum measured on the data, problems or not."""
    from runtime.step_context import StepError

    console = console or Console(file=open(os.devnull, "w"))
    found: list[Diagnostic] = []
    with tempfile.TemporaryDirectory(prefix="craftc-preflight-") as tmp:
        try:
            plan, plan_dir, warehouse = _world(load, recipe_path, Path(tmp), console)
            found = data_diagnostics(load.recipe.schema_, warehouse, report)
            instances = _instances(plan, plan_dir, warehouse)
            outcomes, skipped, candidates = _gate(plan, instances, warehouse)
        except StepError as err:
            return [*found, _located_failure(load, str(err), recipe_path)]
    return found + _diagnostics(load, instances, outcomes, skipped, candidates)


def data_diagnostics(schema, warehouse: Path, report: list[str] | None = None) -> list[Diagnostic]:
    """What the data says of the spec (runtime/world/data_check.py), at each key's, ref's and
    enum field's line in the schema spec: E320 (a ref that matches no target key), W321 (a
    ref below 90% or on an empty column), W322 (enum values not listed), W323 (a key that
    repeats or is null)."""
    import duckdb

    from runtime.world.data_check import check_data

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        findings = check_data(con, schema)
    finally:
        con.close()
    entities = {e.name: e for e in schema.entities}
    out = []
    for f in findings:
        if report is not None:
            report.append(("  ok    " if f.severity == "ok" else f"  {f.code}  ") + f.message)
        if f.severity == "ok":
            continue
        entity = entities[f.entity]
        member = (entity.key or entity) if f.kind == "key" else next(
            (m for m in (*entity.refs, *entity.fields) if m.name == f.member), entity)
        out.append(Diagnostic(f.code, f.severity, f.message, member.span or entity.span or schema.span, f.help))
    return out


_PARAM = re.compile(r"param `([A-Za-z_]\w*)`")
_DUCKDB_ERROR = re.compile(r"(Binder|Catalog|Conversion|Parser) Error: (.*)")
_QUOTED = re.compile(r'"([^"]+)"|`([^`]+)`')


def _from_here(recipe_path: Path, path: str) -> str:
    """A path the recipe names (relative to the recipe file) as the user's shell reaches it."""
    if Path(path).is_absolute():
        return path
    return Path(os.path.relpath(recipe_path.parent / path)).as_posix()


def _located_failure(load, message: str, recipe_path: Path = Path("recipe.craft")) -> Diagnostic:
    """The preflight could not get as far as the references: put the error at the line that
    holds the fix (the param, the entity of the schema whose table drifted) and name the
    command that shows more."""
    recipe = load.recipe
    first = message.strip().splitlines()[0] if message.strip() else "unknown error"
    named = _PARAM.search(message)
    if named:
        for w in recipe.workflows:
            for p in w.params:
                if p.name == named.group(1) and (p.entity is None or f"{p.entity}.{p.field}" in message):
                    no_values = "no non-null values" in message
                    return Diagnostic(
                        "E315", "error", f"workflow `{w.name}`: {first}", p.span or w.span or recipe.span,
                        f"draw `{p.name}` from a field that holds values (`param {p.name} from Entity.field`), "
                        f"or list them (`param {p.name} one_of(...)`)" if no_values else
                        f"fix `param {p.name}` of `{w.name}`, then run `craftc check --preflight` again")
    duck = _DUCKDB_ERROR.search(message)
    schema = recipe.schema_
    if duck and schema is not None:
        names = {a or b for a, b in _QUOTED.findall(duck.group(2))}

        def bound(e) -> set[str]:
            return {e.table, e.table.split(".")[-1], e.view} | {f.column for f in e.fields} \
                | {r.column for r in e.refs} | ({e.key.column} if e.key is not None else set())

        # An entity binding a name the error quotes first; then one whose view or table it mentions.
        named = [e for e in schema.entities if names & bound(e)] or [
            e for e in schema.entities if e.view in message or f'"{e.table.split(".")[-1]}"' in message]
        for e in named[:1]:
            source = (f"${recipe.warehouse_env}" if recipe.warehouse_env else
                      _from_here(recipe_path, recipe.warehouse) if recipe.warehouse else "WAREHOUSE")
            return Diagnostic(
                "E315", "error", f"entity `{e.name}` no longer matches {source}: "
                                 f"DuckDB {duck.group(1)} Error: {duck.group(2)[:200]}",
                e.span or recipe.span,
                f"run `craftc import {source} --check {_from_here(recipe_path, schema.source)}` to list what "
                "changed, then update the entity's bindings (or re-import the schema)")
    return Diagnostic("E315", "error", f"the preflight could not run the references: {first}",
                      recipe.span, "fix the problem above and run `craftc check --preflight` again")


def _world(load, recipe_path: Path, tmp: Path, console: Console):
    """The plan dir and warehouse a run would use, built in ``tmp``."""
    from craftc.emit.compile import Compiled, _solution_sources, plan_dir_files
    from craftc.emit.plan import render_plan_files, write_plan_files
    from craftc.ir import Plan
    from runtime.layout import WAREHOUSE
    from runtime.step_context import StepContext
    from runtime.world.step import run_world

    files = render_plan_files(load.recipe, _solution_sources(load))
    plan_dir = tmp / "plan"
    write_plan_files(plan_dir_files(Compiled(load.recipe, files, load), recipe_path, plan_dir), plan_dir)
    plan = Plan.model_validate_json((plan_dir / "plan.json").read_text(encoding="utf-8"))
    out = tmp / "run" / WAREHOUSE.step
    out.mkdir(parents=True)
    run_world(StepContext(plan, plan_dir, tmp / "run", out, console, plan.recipe.seed))
    return plan, plan_dir, out / WAREHOUSE.path


def _instances(plan, plan_dir: Path, warehouse: Path) -> list[dict]:
    """The instances a run draws (same seed, same `teacher { instances }`), train and held out alike."""
    import duckdb

    from runtime.distill.step import run_instances
    from runtime.step_context import StepError
    from runtime.workflows import InstanceError, SolutionError

    recipe = plan.recipe
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        found, _ = run_instances(recipe, con, recipe.seed, solution_root=plan_dir)
    except (InstanceError, SolutionError) as err:
        raise StepError(str(err)) from None
    finally:
        con.close()
    return [{**json.loads(json.dumps(i.to_dict(), default=str)), "split": "train"} for i in found]


def _gate(plan, instances: list[dict], warehouse: Path):
    """Outcomes of each reference trajectory, and the instance turns whose reference failed."""
    from runtime.distill.blocks import format_turn
    from runtime.distill.gates import sandbox_limits
    from runtime.distill.step import gate_candidates
    from runtime.layout import API_FACTORY
    from runtime.sandbox import SandboxError, SandboxPool
    from runtime.step_context import StepError
    from runtime.workflows import warmup_jobs

    recipe = plan.recipe
    # A turn with checks and no solution has no reference to send through the gates: its
    # params were drawn on the warehouse above, its checks typed by `craftc check`, and its
    # candidates are judged when a teacher writes them.
    solved = {(w.name, n) for w in recipe.workflows for n, t in enumerate(w.turns) if t.solution is not None}
    candidates = [{"candidate_id": f"{i['instance_id']}/t{n + 1}/reference", "instance_id": i["instance_id"],
                   "workflow": i["workflow"], "turn": n, "metadata": {},
                   "text": format_turn(THINK, turn["plan"], turn["code"], recipe.format)}
                  for i in instances for n, turn in enumerate(i["turns"]) if (i["workflow"], n) in solved]
    try:
        pool = SandboxPool(min(2, os.cpu_count() or 1), warehouse, sandbox_limits(recipe), API_FACTORY,
                           warmup=warmup_jobs(instances))
    except SandboxError as err:
        raise StepError(f"cannot start the sandbox: {err}") from None
    with pool:
        outcomes, skipped = gate_candidates(recipe, instances, candidates, pool)
    return outcomes, skipped["turns"], candidates


def _turn_span(load, workflow: str, turn: int):
    """The span of the turn's `solution "..."` in the recipe (else the workflow's)."""
    w = next(w for w in load.recipe.workflows if w.name == workflow)
    span = w.span
    lines = load.sources.get(span.file, "").splitlines() if span else []
    solutions = [n for n in range(span.line, min(span.end_line, len(lines)) + 1)
                 if re.search(r'\bsolution\s+"', lines[n - 1].split("#", 1)[0])] if span else []
    if turn < len(solutions):
        n = solutions[turn]
        col = re.search(r'\bsolution\s+"', lines[n - 1]).start() + 1
        return span_at(span.file, n, col, len("solution"))
    return w.turns[turn].span or span


def _diagnostics(load, instances, outcomes, skipped, candidates) -> list[Diagnostic]:
    per_turn = defaultdict(int)
    for i in instances:
        for n in range(len(i["turns"])):
            per_turn[(i["workflow"], n)] += 1
    params = {i["instance_id"]: i["params"] for i in instances}
    failures: dict[tuple, list] = defaultdict(list)
    for s in skipped:
        failures[("E315", s["workflow"], s["turn"], s["reason"])].append(params[s["instance_id"]])
    by_id = {c["candidate_id"]: c for c in candidates}
    for o in outcomes:
        if o["accepted"]:
            continue
        c = by_id[o["candidate_id"]]
        failed = [j for j in o.get("judges", []) if not j["passed"]] if o["gate"] == "judge" else []
        reason = "; ".join(f"judge {j['judge']}: {j['reason']}" for j in failed) or \
            f"{o['gate']} gate ({o['reason_class']}): {o['reason']}"
        failures[("E316", c["workflow"], c["turn"], reason)].append(params[c["instance_id"]])
    out = []
    for (code, workflow, turn, reason), failing in sorted(failures.items()):
        label = f"reference of workflow `{workflow}` turn {turn + 1}"
        share = f"{len(failing)} of {per_turn[(workflow, turn)]} instances"
        note = f"params of a failing instance: {json.dumps(failing[0], sort_keys=True, default=str)}"
        no_rows = "returns no rows" in reason
        if code == "E315" and no_rows and len(failing) < per_turn[(workflow, turn)]:
            out.append(Diagnostic(
                "W317", "warning", f"{label} returns no rows on {share}", _turn_span(load, workflow, turn),
                "a run skips those instance turns and trains on the rest; narrow the params (or make "
                "the reference return rows for them) to keep every instance", (note,)))
            continue
        if code == "E315":
            message = f"{label} fails on {share}: {reason}"
            help_text = (f"fix the solution of `{workflow}` turn {turn + 1} so it returns rows for every "
                         "param value (or narrow the params); a run would skip these instance turns "
                         "and the workflow would lose its training data")
        else:
            message = f"{label} is rejected by the gate on {share}: {reason}"
            help_text = ("every candidate that follows this reference would be rejected too: reword the "
                         "plan (the solution's docstring) or make the code read what the plan names")
        out.append(Diagnostic(code, "error", message, _turn_span(load, workflow, turn), help_text, (note,)))
    return out
