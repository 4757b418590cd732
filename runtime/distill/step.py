"""The distill, gate and dataset steps of `craftc run`.

- ``run_distill``: instances from the warehouse, split into train and eval; the
  teacher writes ``candidates`` per train instance turn (``candidates.jsonl``).
- ``run_gate``: the Tri-Gate filter in the sandbox pool; ``outcomes.jsonl``,
  ``accepted.jsonl``, ``funnel.json`` / ``funnel.md``.
- ``run_dataset``: ``dataset/stripped``, ``dataset/stuffed`` (Arrow),
  ``dataset/eval_instances.json`` and ``dataset/corpus.txt``.

Each writes only into ``ctx.out_dir`` (the runner renames it into place).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.progress import Progress

from craftc.ir import BlockFormat
from runtime.layout import (ACCEPTED, API_FACTORY, CANDIDATES, CORPUS, DATASET_DIR, DISTILL_INSTANCES, EVAL_INSTANCES,
                            FUNNEL_JSON, FUNNEL_MD, GATE_INSTANCES, LEAKAGE, OUTCOMES, TEACHER_ALTERNATIVES,
                            WAREHOUSE)
from runtime.step_context import StepContext, StepError, StepResult

__all__ = ["run_distill", "run_gate", "run_dataset", "gated_recipe", "input_builder", "instances_per_workflow",
           "run_instances", "with_its_workflow"]

GATE_CHUNK = 64


def instances_per_workflow(eval_instances: int, holdout: float) -> int:
    """Enough instances that the reserved value groups give about ``eval_instances`` per
    workflow, split and kind.

    A ``holdout`` share of the drawn value groups is reserved, half for test and half
    for dev, and a held-out phrasing is kept only when asked with a reserved group, so
    the draw is about six times ``eval_instances / holdout``. These are the instances the
    held-out splits are taken from; ``teacher { instances N }`` then sets the training
    volume apart from them (:func:`run_instances`).
    """
    share = holdout if holdout > 0 else 0.2
    return max(eval_instances + 2, math.ceil(6 * eval_instances / share))


def run_instances(recipe, con, seed: int, **solutions) -> tuple[list, dict[str, str]]:
    """The instances a run draws and their splits (the distill step and the preflight alike).

    ``solutions`` is ``solution_root`` or ``solution_sources``, as for ``make_instances``.
    """
    from runtime.workflows import draw_instances

    return draw_instances(recipe, con, seed, instances_per_workflow(recipe.eval.instances, recipe.eval.holdout),
                          recipe.teacher.instances, **solutions)


def _warehouse(ctx: StepContext) -> Path:
    path = ctx.input(WAREHOUSE)
    if not path.is_file():
        raise StepError(f"warehouse `{path}` is missing; rerun `craftc run {ctx.plan_dir} --only world`")
    return path


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in records), encoding="utf-8")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _seed_for(seed: int, *parts: Any) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in (seed, *parts)).encode()).hexdigest()
    return int(digest[:8], 16)


# ---------------------------------------------------------------- distill


def _requests(recipe, instances: list[dict], system: str, seed: int):
    from runtime.distill.teachers import TeacherRequest

    # The values the synthetic teacher may swap in for a wrong answer: training values only,
    # so no dev or test value reaches a training candidate (the dataset step audits it).
    alternatives: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for instance in instances:
        if instance["split"] != "train":
            continue
        for name, value in instance["params"].items():
            if value not in alternatives[instance["workflow"]][name]:
                alternatives[instance["workflow"]][name].append(value)
    workflows = {w.name: w for w in recipe.workflows}
    requests, keys = [], []
    for instance in instances:
        if instance["split"] != "train":
            continue
        history: list[dict[str, str]] = []
        for index, turn in enumerate(instance["turns"]):
            messages = (*history, {"role": "user", "content": turn["ask"]})
            # The params the questions so far ask for, not the whole instance's: a
            # conversation's first question does not name the filter a later turn adds, and
            # a scratchpad that lists it teaches the agent to invent parameters.
            asked = asked_params(workflows[instance["workflow"]], instance, index)
            requests.append(TeacherRequest(
                system, tuple(messages), recipe.teacher.candidates,
                _seed_for(seed, instance["instance_id"], index),
                {"workflow": instance["workflow"], "ask": turn["ask"], "params": asked,
                 "task": workflows[instance["workflow"]].doc if index == 0 else "",
                 "plan": turn["plan"], "code": turn["code"],
                 "alternatives": {k: list(v) for k, v in alternatives[instance["workflow"]].items()}}))
            keys.append((instance, index))
            if not turn["code"]:     # no reference: the follow-up question comes after the question
                history = list(messages)
                continue
            history = [*messages, {"role": "assistant", "content": f"<{recipe.format.plan}>\n{turn['plan']}\n"
                                   f"</{recipe.format.plan}>\n<{recipe.format.code}>\n{turn['code']}\n</{recipe.format.code}>"}]
    return requests, keys


def teacher_alternatives(requests) -> dict[str, dict[str, list]]:
    """workflow -> param -> the values the teacher's requests offered as alternatives."""
    out: dict[str, dict[str, list]] = {}
    for request in requests:
        out.setdefault(request.context["workflow"], request.context.get("alternatives", {}))
    return out


def run_distill(ctx: StepContext) -> StepResult:
    """Sample instances, split them, and let the teacher write candidates for train ones."""
    import duckdb

    from runtime.distill.teachers import TeacherError, make_teacher
    from runtime.workflows import InstanceError, SolutionError, held_out_kind

    recipe = ctx.plan.recipe
    started = time.monotonic()
    con = duckdb.connect(str(_warehouse(ctx)), read_only=True)
    try:
        # Through ctx.artifact, so the manifest names every solution file the step read.
        solutions = {turn.solution: ctx.artifact(turn.solution) for wf in recipe.workflows for turn in wf.turns
                     if turn.solution is not None}
        instances, split_of = run_instances(recipe, con, ctx.seed, solution_sources=solutions)
    except (InstanceError, SolutionError) as err:
        raise StepError(with_its_workflow(recipe, str(err))) from None
    finally:
        con.close()
    records = [{**i.to_dict(), "split": split_of[i.instance_id],
                **({"heldout": held_out_kind(i, recipe.eval)} if split_of[i.instance_id] != "train" else {})}
               for i in instances]
    _report_short_volume(recipe, records, ctx.console)
    system = ctx.artifact("prompts/system_stuffed.md").read_text(encoding="utf-8")
    requests, keys = _requests(recipe, records, system, ctx.seed)
    (ctx.out_dir / DISTILL_INSTANCES.path).write_text(json.dumps(records, indent=1, sort_keys=True, default=str) + "\n")
    # What the teacher is given to swap in for wrong values, for the dataset step's leak audit.
    (ctx.out_dir / TEACHER_ALTERNATIVES.path).write_text(
        json.dumps(teacher_alternatives(requests), indent=1, sort_keys=True, default=str) + "\n")
    teacher = None
    try:
        teacher = make_teacher(recipe.teacher, recipe.schema_, recipe.format)
        written, cost = _stream_candidates(ctx, teacher, requests, keys, records)
    except TeacherError as err:
        raise StepError(str(err)) from None
    finally:
        if hasattr(teacher, "close"):
            teacher.close()
    wall = time.monotonic() - started
    splits = {name: sum(1 for r in records if r["split"] == name) for name in sorted(set(split_of.values()))}
    ctx.console.print(f"distill: {teacher.name} wrote {written['candidates']} candidates for {len(requests)} "
                      "instance turns")
    metrics = {"teacher": teacher.name, "instances": len(records), "splits": splits,
               "requests": len(requests), "candidates": written["candidates"], "repaired": written["repaired"],
               "candidates_per_s": round(written["candidates"] / wall, 1) if wall else None}
    outputs = (DISTILL_INSTANCES.path, CANDIDATES.path, TEACHER_ALTERNATIVES.path)
    if cost is not None:
        metrics["teacher_cost"] = cost
        metrics["failed"] = cost["failed"]
        if cost["failed"]:
            outputs += (TEACHER_FAILURES,)
    return StepResult(metrics=metrics, outputs=outputs)


TEACHER_FAILURES = "teacher_failures.jsonl"


def teacher_cache_dir(ctx: StepContext) -> Path:
    """The model teachers' answer cache: ``RUN_DIR/teacher_cache``, outside the step's own
    directory, so a stopped or rerun distill step keeps every answer it received."""
    from runtime.distill.teacher_cache import CACHE_DIR

    return ctx.run_dir / CACHE_DIR


def _candidate_record(keys, request_index: int, candidate, extra: dict) -> str:
    instance, turn = keys[request_index]
    record = {"candidate_id": f"{instance['instance_id']}/t{turn + 1}/c{candidate.candidate_index}",
              "instance_id": instance["instance_id"], "workflow": instance["workflow"], "turn": turn,
              "text": candidate.text, "metadata": candidate.metadata, **extra}
    return json.dumps(record, sort_keys=True, default=str) + "\n"


def _stream_candidates(ctx: StepContext, teacher, requests, keys, records) -> tuple[dict, dict | None]:
    """Ask the teacher and append each candidate to ``candidates.jsonl`` as it arrives.

    Returns ``({"candidates", "repaired"}, cost)``; ``cost`` (None for the synthetic
    teacher) has the answers reused and sent, retries, failures and tokens, in total and
    per workflow. A model teacher's answers go through the teacher cache
    (`runtime.distill.teacher_stream`); requests that fail after every retry are written
    to ``teacher_failures.jsonl``. With ``teacher { feedback N }`` the candidates are
    held until the repair rounds are over, then written.
    """
    from runtime.distill.teacher_cache import AnswerCache
    from runtime.distill.teacher_stream import StreamProgress, TeacherStopped, TeacherStream
    from runtime.distill.teachers import TeacherError

    recipe = ctx.plan.recipe
    cache = AnswerCache(teacher_cache_dir(ctx)) if recipe.teacher.kind != "synthetic" else None
    total = sum(r.n for r in requests)
    stream = TeacherStream(teacher, recipe.teacher, cache, total)
    if cache is not None and len(cache):
        ctx.console.print(f"distill: the teacher cache {cache.path} holds {len(cache)} answers; they are reused, "
                          "not asked for again")

    def describe(r: int, i: int) -> str:
        instance, turn = keys[r]
        return f"{instance['instance_id']}/t{turn + 1}/c{i}"

    written = {"candidates": 0, "repaired": 0}
    per_workflow: dict[str, dict[str, int]] = defaultdict(lambda: {"candidates": 0, "prompt_tokens": 0,
                                                                   "completion_tokens": 0})

    def write(out, r: int, candidate, extra: dict) -> None:
        out.write(_candidate_record(keys, r, candidate, extra))
        written["candidates"] += 1
        written["repaired"] += bool(candidate.metadata.get("repairs"))
        counts = per_workflow[keys[r][0]["workflow"]]
        counts["candidates"] += 1
        for k in ("prompt_tokens", "completion_tokens"):
            counts[k] += (candidate.metadata.get("usage") or {}).get(k, 0)

    failures = None
    try:
        with (ctx.out_dir / CANDIDATES.path).open("w", encoding="utf-8") as out, \
                StreamProgress(ctx.console, f"{teacher.name}: candidates", total) as progress:
            held = [] if recipe.teacher.feedback else None
            try:
                for answer in stream.run(requests):
                    progress.update(stream.stats)
                    if answer.candidate is None:
                        if failures is None:
                            failures = (ctx.out_dir / TEACHER_FAILURES).open("w", encoding="utf-8")
                        instance, turn = keys[answer.request_index]
                        failures.write(json.dumps({"candidate_id": describe(answer.request_index,
                                                                            answer.candidate_index),
                                                   "instance_id": instance["instance_id"],
                                                   "workflow": instance["workflow"], "turn": turn,
                                                   "attempts": answer.attempts, "error": answer.error},
                                                  sort_keys=True) + "\n")
                    elif held is not None:
                        held.append((answer.request_index, answer.candidate))
                    else:
                        write(out, answer.request_index, answer.candidate, {})
                if held is not None:
                    for r, candidate, extra in _with_feedback(ctx, stream, requests, held, keys, records):
                        write(out, r, candidate, extra)
            except TeacherStopped as stop:
                where = cache.path if cache is not None else "memory"
                raise TeacherError(f"distill: {stream.explain(stop, where, describe)}") from None
            progress.update(stream.stats, force=True)
    finally:
        if failures is not None:
            failures.close()
        if cache is not None:
            cache.close()
    if cache is None:
        return written, None
    cost = {**stream.stats.to_dict(), "cache": str(cache.path),
            "per_workflow": {w: per_workflow[w] for w in sorted(per_workflow)}}
    s = stream.stats
    ctx.console.print(f"distill: {s.reused} answers reused from the teacher cache, {s.sent} received "
                      f"({s.sent / max(time.monotonic() - s.started, 1e-9):.1f} requests/s, {s.retries} retries, "
                      f"{s.failed} failed); tokens: {s.prompt_tokens} prompt + {s.completion_tokens} completion "
                      f"({s.paid_prompt_tokens + s.paid_completion_tokens} paid by this run)")
    if s.failed:
        ctx.console.print(f"[yellow]![/] distill: {s.failed} teacher requests failed after every retry (within "
                          f"`max_failed {recipe.teacher.max_failed:.2%}`); they are listed in "
                          f"{TEACHER_FAILURES} and left out of candidates.jsonl")
    return written, cost


def _report_short_volume(recipe, records: list[dict], console) -> None:
    """Name the workflows whose param space could not give ``teacher { instances N }``."""
    wanted = recipe.teacher.instances
    if wanted is None:
        return
    trained = defaultdict(int)
    for record in records:
        trained[record["workflow"]] += record["split"] == "train"
    short = [f"{w.name} ({trained[w.name]})" for w in recipe.workflows
             if w.name not in recipe.eval.holdout_workflows and trained[w.name] < wanted]
    if short:
        console.print(f"distill: fewer than {wanted} training instances (too few distinct params outside the "
                      f"held-out ones): {', '.join(short)}")


def _with_feedback(ctx: StepContext, teacher, requests, candidates, keys, records):
    """Teacher feedback (``teacher { feedback N }``): failing code goes back to the teacher."""
    from runtime.distill.datasets import read_turn_templates
    from runtime.distill.feedback import repair_candidates
    from runtime.distill.gates import sandbox_limits
    from runtime.sandbox import SandboxError, SandboxPool, sandbox_workers
    from runtime.workflows import warmup_jobs

    recipe = ctx.plan.recipe
    templates = read_turn_templates(ctx.artifact(input_builder(ctx)["turn_template"]).read_text(encoding="utf-8"))
    params = [keys[r][0]["params"] for r in range(len(requests))]
    try:
        pool = SandboxPool(sandbox_workers(recipe, ctx.console), _warehouse(ctx), sandbox_limits(recipe), API_FACTORY,
                           warmup=warmup_jobs([r for r in records if r["split"] == "train"]))
    except SandboxError as err:
        raise StepError(f"cannot start the sandbox for teacher feedback: {err}") from None
    with pool:
        return repair_candidates(teacher, requests, candidates, params, pool, recipe, templates["tool"],
                                 keep_attempts=recipe.teacher.failed_attempts == "masked")


# ---------------------------------------------------------------- gate


def with_its_workflow(recipe, message: str) -> str:
    """An instance error names a param (`param `tz`: `Advertiser.timezone` has no non-null
    values ...`): say which workflow declares it, and the command that shows its recipe line
    (plan.json keeps no source lines).

    >>> from types import SimpleNamespace as NS
    >>> recipe = NS(workflows=[NS(name="by_tz", params=[NS(name="tz", entity="Advertiser", field="timezone")])])
    >>> with_its_workflow(recipe, "param `tz`: `Advertiser.timezone` has no non-null values in the warehouse")
    'workflow `by_tz`: param `tz`: `Advertiser.timezone` has no non-null values in the warehouse; `craftc check --preflight RECIPE` shows the param at its line'
    """
    found = re.match(r"param `(\w+)`: `(\w+)\.(\w+)`", message)
    if found is None:
        return message
    owners = [w.name for w in recipe.workflows for p in w.params
              if (p.name, p.entity, p.field) == found.groups()]
    if not owners:
        return message
    return f"workflow `{owners[0]}`: {message}; `craftc check --preflight RECIPE` shows the param at its line"


def gate_candidates(recipe, instances: list[dict], candidates: list[dict], pool, console=None,
                    ensemble=None, report: dict | None = None) -> tuple[list[dict], dict]:
    """Run the Tri-Gate over candidate records; returns outcome dicts and reference failures.

    Instance turns whose reference is visible are judged against it (and skipped when
    it fails or returns no rows); the others by their checks and the candidates'
    agreement. ``report``, when given, receives the funnel's ``agreement`` section.
    """
    from runtime.distill.agreement import settle_agreement
    from runtime.distill.gates import GateCase, TriGate
    from runtime.workflows import InstanceTurn

    by_id = {i["instance_id"]: i for i in instances}
    workflows = {w.name: w for w in recipe.workflows}
    gate = TriGate(recipe, pool, ensemble)
    gate.keep_frames = report is not None and "oracle" in report
    jobs = {}
    for c in candidates:
        instance = by_id[c["instance_id"]]
        turn = instance["turns"][c["turn"]]
        if turn.get("reference_visible", True):
            jobs[(c["instance_id"], c["turn"])] = (turn["code"], instance["params"])
    failed_refs = gate.run_references(jobs)
    unusable = dict(failed_refs)
    for key, result in gate.references.items():
        if result.ok and result.result_rows == 0:
            unusable[key] = "the reference solution returns no rows for these params"
    cases, skipped, turns = [], [], {}
    for c in candidates:
        key = (c["instance_id"], c["turn"])
        if key in unusable:
            skipped.append({"candidate_id": c["candidate_id"], "reason": unusable[key]})
            continue
        if key not in turns:  # many candidates share an instance turn: parse its reference once
            instance = by_id[c["instance_id"]]
            turn = InstanceTurn.from_dict(instance["turns"][c["turn"]])
            params = relevant_params(turn.code, instance["params"]) if turn.reference_visible else \
                asked_params(workflows[instance["workflow"]], instance, c["turn"])
            turns[key] = (turn, params)
        turn, params = turns[key]
        cases.append(GateCase(c["candidate_id"], c["instance_id"], c["turn"], c["text"], turn.ask,
                              params, turn.expectations, by_id[c["instance_id"]]["params"], turn.reference_visible))
    outcomes = []
    with Progress(console=console, transient=True, disable=console is None) as progress:
        task = progress.add_task("Tri-Gate", total=len(cases))
        chunks = [cases[start:start + GATE_CHUNK] for start in range(0, len(cases), GATE_CHUNK)]
        for chunk in gate.run_chunks(chunks):
            outcomes += [o.to_dict() for o in chunk]
            progress.advance(task, len(chunk))
    if gate.voters:
        checks = {key: turn.expectations for key, (turn, _) in turns.items()}
        agreement = settle_agreement(outcomes, gate.voters, checks, {k: v["params"] for k, v in by_id.items()},
                                     recipe.gates.output.agree, recipe.gates.order, gate.off_question)
        if report is not None:
            report["agreement"] = agreement
    if report is not None and "oracle" in report:
        from runtime.distill.oracle import measure_with_hidden_references
        report["oracle"] = measure_with_hidden_references(recipe, instances, candidates, outcomes, gate)
    turns_skipped = [{"instance_id": k[0], "turn": k[1], "workflow": by_id[k[0]]["workflow"], "reason": v}
                     for k, v in sorted(unusable.items())]
    return outcomes, {"instance_turns": {f"{k[0]}/t{k[1] + 1}": v for k, v in sorted(unusable.items())},
                      "turns": turns_skipped, "candidates": len(skipped)}


def asked_params(workflow, instance: dict, turn: int) -> dict[str, Any]:
    """The params a turn's question or an earlier one asks for (a reference-free
    stand-in for `relevant_params`: a conversation keeps earlier turns' constraints).

    A param is asked for when a ``{name}`` slot of the phrasing the teacher was shown
    names it. Looking for the value in the question's text instead would also find
    words that only look like it: "Display and video spend" does not ask for
    ``format = 'video'``, which a later turn introduces.
    """
    from runtime.workflows import ask_slots

    slots = set().union(*(ask_slots(workflow.turns[index].asks[t["phrasing_index"]])
                          for index, t in enumerate(instance["turns"][: turn + 1])))
    return {name: value for name, value in instance["params"].items() if name in slots}


def relevant_params(reference_code: str, params: dict[str, Any]) -> dict[str, Any]:
    """The params this turn's reference code uses (a conversation's first turn may not
    use a param that a later turn introduces)."""
    from runtime.distill.judges import JudgeCase, PromptParamsJudge
    from runtime.distill.vocabulary import SchemaVocabulary

    judge = PromptParamsJudge(SchemaVocabulary())
    return {name: value for name, value in params.items()
            if judge.judge(JudgeCase("", "", reference_code, {name: value})).passed}


def gated_recipe(ctx: StepContext):
    """The recipe as the gate runs it: gate order, settings and judges from ``specs/gates.json``.

    The spec holds the judge ensemble resolved by the compiler (names to kinds, weights,
    backends), so the gate never re-derives it from the recipe.
    """
    return _gate_spec(ctx)[0]


def _gate_spec(ctx: StepContext):
    """(recipe as gated, llm judge prompts by judge name), both from the plan's files."""
    from craftc.ir import Gates, Judge

    spec = json.loads(ctx.artifact("specs/gates.json").read_text(encoding="utf-8"))
    entries = spec["judge"]["judges"]
    judges = tuple(Judge.model_validate({k: v for k, v in j.items() if k != "prompt"}) for j in entries)
    prompts = {j["name"]: ctx.artifact(j["prompt"]).read_text(encoding="utf-8") for j in entries if "prompt" in j}
    gates = Gates.model_validate({**spec, "judge": {**spec["judge"], "judges": [j.name for j in judges]}})
    return ctx.plan.recipe.model_copy(update={"gates": gates, "judges": judges}), prompts


def judge_cache_dir(ctx: StepContext, setting: str) -> Path:
    """The llm judges' verdict cache: ``gate judge { cache DIR }``, relative to the run dir."""
    path = Path(setting)
    return path if path.is_absolute() else ctx.run_dir / path


def run_gate(ctx: StepContext) -> StepResult:
    """Filter the distill step's candidates through the three gates."""
    from runtime.distill.funnel import build_funnel, dumps, funnel_markdown, print_funnel
    from runtime.distill.gates import sandbox_limits
    from runtime.distill.losses import gate_losses, report_losses
    from runtime.sandbox import SandboxError, SandboxPool, sandbox_workers
    from runtime.workflows import warmup_jobs

    from runtime.distill.judges import JudgeEnsemble, JudgeError
    from runtime.distill.teachers import TeacherError

    recipe, prompts = _gate_spec(ctx)
    instances_text = ctx.input(DISTILL_INSTANCES).read_text(encoding="utf-8")
    instances = json.loads(instances_text)
    candidates = _read_jsonl(ctx.input(CANDIDATES))
    started = time.monotonic()
    try:
        ensemble = JudgeEnsemble.from_recipe(recipe, prompts=prompts,
                                             cache_dir=judge_cache_dir(ctx, recipe.gates.judge.cache))
    except (JudgeError, TeacherError) as err:
        raise StepError(str(err)) from None
    try:
        pool = SandboxPool(sandbox_workers(recipe, ctx.console), _warehouse(ctx), sandbox_limits(recipe), API_FACTORY,
                           warmup=warmup_jobs(instances))
    except SandboxError as err:
        raise StepError(f"cannot start the sandbox for the execution gate: {err}") from None
    hidden = any(not t.get("reference_visible", True) and t["code"] for i in instances for t in i["turns"])
    report: dict = {"oracle": None} if hidden else {}
    with pool:
        try:
            outcomes, failed_refs = gate_candidates(recipe, instances, candidates, pool, ctx.console, ensemble,
                                                    report=report)
        except TeacherError as err:     # an llm judge's endpoint went away: what it answered is cached
            raise StepError(str(err)) from None
    wall = time.monotonic() - started
    by_id = {c["candidate_id"]: c for c in candidates}
    funnel = build_funnel(outcomes, by_id, recipe.gates.order)
    funnel["skipped"] = failed_refs
    if report.get("agreement"):
        funnel["agreement"] = report["agreement"]
    if report.get("oracle") and "oracle" in funnel:
        funnel["oracle"]["references"] = report["oracle"]
    losses = gate_losses(instances, candidates, outcomes, failed_refs["turns"])
    funnel["losses"] = [loss.to_dict() for loss in losses]
    report_losses(losses, "gate", recipe.on_loss, None)     # on_loss error: fail before writing
    accepted = [{**by_id[o["candidate_id"]], "execution": o["execution"]} for o in outcomes if o["accepted"]]
    _write_jsonl(ctx.out_dir / OUTCOMES.path, outcomes)
    _write_jsonl(ctx.out_dir / ACCEPTED.path, accepted)
    (ctx.out_dir / GATE_INSTANCES.path).write_text(instances_text)
    (ctx.out_dir / FUNNEL_JSON.path).write_text(dumps(funnel), encoding="utf-8")
    (ctx.out_dir / FUNNEL_MD.path).write_text(funnel_markdown(funnel), encoding="utf-8")
    print_funnel(funnel, ctx.console)
    report_losses(losses, "gate", recipe.on_loss, ctx.console)
    per_gate = {g["gate"]: g["rejected"] for g in funnel["gates"]}
    metrics = {"candidates": len(outcomes), "accepted": len(accepted), "rejected_per_gate": per_gate,
               "candidates_per_s": round(len(outcomes) / wall, 1) if wall else None,
               "skipped_unusable_reference": failed_refs["candidates"],
               "warnings": [loss.line() for loss in losses]}
    metrics["sandbox"] = sandbox_record(pool, outcomes)
    if "judges" in funnel:
        metrics["judges"] = funnel["judges"]["per_judge"]
    if "repairs" in funnel:
        metrics["repairs"] = funnel["repairs"]
    if "thin_evidence" in funnel:        # acceptances that rest on a reference of one row or one value
        metrics["thin_evidence_accepted"] = funnel["thin_evidence"]["accepted"]
    if "confusion" in funnel:
        metrics["corrupted_rejected_rate"] = funnel["confusion"]["corrupted_rejected_rate"]
        metrics["clean_rejected_rate"] = funnel["confusion"]["clean_rejected_rate"]
    if "agreement" in funnel:
        metrics["set_aside_rate"] = funnel["agreement"]["set_aside_rate"]
    if "oracle" in funnel:
        metrics["oracle_precision"], metrics["oracle_recall"] = funnel["oracle"]["precision"], funnel["oracle"]["recall"]
    return StepResult(metrics=metrics, outputs=(FUNNEL_JSON.path, FUNNEL_MD.path, ACCEPTED.path, OUTCOMES.path))


def sandbox_record(pool, outcomes: list[dict]) -> dict:
    """Which isolation layers protected the gate's runs, for the run's summary."""
    runs = [o["execution"]["layers"] for o in outcomes if o.get("execution", {}).get("ran")]
    names = sorted({name for layers in runs for name in layers})
    return {"workers": pool.size, "jobs_per_process": pool.limits.jobs_per_process, "redacted": pool.redactions,
            "worker_huge_pages": pool.huge_pages, "runs": len(runs),
            "layers_on_in_every_run": [n for n in names if all(layers.get(n) for layers in runs)],
            "layers_off_in_some_run": {n: sum(not layers.get(n) for layers in runs) for n in names
                                       if not all(layers.get(n) for layers in runs)}}


# ---------------------------------------------------------------- dataset


def input_builder(ctx: StepContext) -> dict:
    """``specs/input_builder.json``: which system prompt and turn template each input mode uses."""
    return json.loads(ctx.artifact("specs/input_builder.json").read_text(encoding="utf-8"))


def run_dataset(ctx: StepContext) -> StepResult:
    """Accepted trajectories -> stripped and stuffed datasets, eval instances, corpus."""
    from runtime.distill.datasets import (MODES, TOKEN_COUNTER, build_examples, corpus_text, dumps,
                                          read_turn_templates, save_dataset)
    from runtime.agent.history import earlier_turns_of
    from runtime.distill.losses import dataset_losses, report_losses

    recipe = ctx.plan.recipe
    instances = json.loads(ctx.input(GATE_INSTANCES).read_text(encoding="utf-8"))
    accepted: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for record in _read_jsonl(ctx.input(ACCEPTED)):
        accepted[(record["instance_id"], record["turn"])].append(record)
    builder = input_builder(ctx)
    systems = {mode: ctx.artifact(builder["modes"][mode]["system_prompt"]).read_text(encoding="utf-8")
               for mode in MODES}
    try:
        templates = read_turn_templates(ctx.artifact(builder["turn_template"]).read_text(encoding="utf-8"))
    except ValueError as err:
        raise StepError(str(err)) from None
    try:
        earlier_turns = earlier_turns_of(builder)
    except ValueError as err:
        raise StepError(str(err)) from None
    examples = build_examples(instances, accepted, systems, templates, BlockFormat(**builder["format"]),
                              earlier_turns)
    if not examples["stripped"]:
        raise StepError("no accepted trajectory reached the dataset: every candidate was rejected; "
                        f"see {FUNNEL_MD.under('RUN_DIR').as_posix()} for the reasons")
    losses = dataset_losses(instances, examples["stripped"])
    report_losses(losses, "dataset", recipe.on_loss, None)
    out = ctx.out_dir / DATASET_DIR.path
    for mode in MODES:
        save_dataset(examples[mode], out / mode)
    held_out = [i for i in instances if i["split"] != "train"]
    (ctx.out_dir / EVAL_INSTANCES.path).write_text(dumps(held_out), encoding="utf-8")
    # The tokenizer of tiny_moe is trained on this corpus, from the training instances only:
    # the schema's logical DDL keeps the stuffed arm's tokens as cheap to encode as the
    # stripped arm's.
    extra = [ctx.artifact("sql/logical_ddl.sql").read_text(encoding="utf-8")]
    train = [i for i in instances if i["split"] == "train"]
    corpus = corpus_text(systems, templates, train, extra)
    (ctx.out_dir / CORPUS.path).write_text(corpus, encoding="utf-8")
    leakage = _audit_leakage(ctx, instances, examples, corpus, [*systems.values(), *templates.values(), *extra],
                             templates["user"], builder["format"]["code"])
    tokens = {mode: sum(e["n_tokens"] for e in examples[mode]) for mode in MODES}
    workflows = sorted({e["workflow"] for e in examples["stripped"]})
    trained = sorted({i["workflow"] for i in instances if i["split"] == "train"})
    conversations = len({(e["instance_id"], e["variant"]) for e in examples["stripped"]})
    per_turn = f" ({conversations} conversations, one example per turn: earlier_turns {earlier_turns})" \
        if earlier_turns != "full" else ""
    ctx.console.print(f"dataset: {len(examples['stripped'])} examples per mode{per_turn} from {len(workflows)} of "
                      f"{len(trained)} train workflows; tokens {tokens}")
    report_losses(losses, "dataset", recipe.on_loss, ctx.console)
    return StepResult(metrics={"examples": len(examples["stripped"]), "conversations": conversations,
                               "earlier_turns": earlier_turns, "tokens": tokens,
                               "token_counter": TOKEN_COUNTER, "eval_instances": len(held_out),
                               "workflows": len(workflows), "train_workflows": len(trained),
                               "workflows_without_examples": [w for w in trained if w not in workflows],
                               "held_out": leakage["splits"], "overlapping_turns": leakage["overlapping_turns"],
                               "warnings": [loss.line() for loss in losses]},
                      outputs=(*(f"{DATASET_DIR.path}/{mode}" for mode in MODES), EVAL_INSTANCES.path,
                               CORPUS.path, LEAKAGE.path))


def _audit_leakage(ctx: StepContext, instances: list[dict], examples: dict, corpus: str, sources: list[str],
                   user_template: str, code_tag: str) -> dict:
    """Audit dev and test against every training artifact; write ``leakage.json`` or fail."""
    from runtime.distill.datasets import dumps
    from runtime.distill.leakage import TrainingArtifacts, audit, leak_message
    from runtime.train.train_split import train_split

    alternatives_file = ctx.input(TEACHER_ALTERNATIVES)
    alternatives = json.loads(alternatives_file.read_text(encoding="utf-8")) if alternatives_file.is_file() else {}
    artifacts = TrainingArtifacts(examples=[e for mode in examples.values() for e in mode],
                                  grpo_instances=train_split(instances), corpus=corpus, alternatives=alternatives,
                                  sources=sources, user_template=user_template)
    record = audit(instances, artifacts, code_tag)
    message = leak_message(record)
    if message:
        raise StepError(message)
    (ctx.out_dir / LEAKAGE.path).write_text(dumps(record), encoding="utf-8")
    held = ", ".join(f"{split} {r['instances']} instances / {r['turns']} turns" for split, r in record["splits"].items())
    ctx.console.print(f"dataset: leak audit: {held}; no held-out turn in any training artifact "
                      f"({', '.join(record['checked'])})")
    return record
