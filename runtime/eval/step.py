"""The ``eval`` step: every arm on the held-out instances, metrics with 95% CIs.

Arms (``eval.arms`` in the recipe):

- ``craft``: the GRPO checkpoint (SFT then GRPO), stripped system prompt;
- ``sft_only``: the SFT checkpoint, stripped prompt;
- ``stuffed``: the schema-stuffed baseline: the same base model trained by the same
  SFT code with the same stage settings on ``dataset/stuffed`` (the same accepted
  trajectories, stuffed system prompt), trained by the sft step into
  ``sft/stuffed/final``, then evaluated with the stuffed prompt.

Eval scores one held-out split, ``eval { split dev|test }`` (test by default): settings
are chosen on dev, figures are stated on test. Within it each instance is of one kind,
``new_values``, ``new_phrasing`` or ``new_workflow`` (``runtime.workflows.instances``);
an episode's ``split`` field holds that kind. A turn whose reference returns no rows
(any empty frame would pass it) or fails is run but not scored: it is marked
``excluded`` and counted in ``eval.json``.

Outputs: ``episodes/<arm>.jsonl`` (each failed user turn with its ``failure`` class),
``eval.json`` (the split scored, its size and exclusions; per arm: overall and per kind;
``per_workflow``: agent score per workflow and kind; ``failures``: failure classes per
arm with one example each, docs/evaluation.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from craftc.ir import EVAL_DECODING, EvalSpec
from runtime.agent import AgentTask, HFGenerator, TurnWording, run_episodes
from runtime.eval.arm_files import finished_arm, write_arm
from runtime.eval.failures import ReferenceCatalog, classify_episode, failure_summary
from runtime.eval.coverage import not_evaluated
from runtime.eval.metrics import cut_off_counts, cut_off_line, per_workflow, summarise
from runtime.eval.processes import decode_side_by_side
from runtime.eval.progress import ArmProgress
from runtime.eval.scoring import score_episode
from runtime.layout import EVAL_ARM_MODELS

if TYPE_CHECKING:
    from craftc.ir import BlockFormat
    from runtime.rewards import SchemaTerms

__all__ = ["EvalInputs", "eval_inputs", "eval_sandbox", "run_arm", "arm_model", "reference_frames", "eval_generator",
           "evaluate_arm", "decode_arm", "split_summaries", "spread_per_split", "run_eval"]

SPLIT_ORDER = ("new_values", "new_phrasing", "new_workflow")
EMPTY_REFERENCE = "the reference returns no rows, so any empty answer would pass"
FAILED_REFERENCE = "the reference fails on this warehouse"


def held_out_tasks(path: Path, split: str) -> list[AgentTask]:
    """The held-out instances of ``split`` (dev or test) as agent tasks, each task's
    ``split`` its kind (new values, new phrasing, new workflow)."""
    from runtime.agent.task import TaskFormatError, read_instance_file

    data = read_instance_file(path)
    if not isinstance(data, list):
        raise TaskFormatError(f"{path} is not a list of instances; rerun the dataset step")
    chosen = [{**item, "split": item.get("heldout", "")} for item in data if item.get("split") == split]
    return [AgentTask.from_dict(item, where=f"{path.name}[{n}]") for n, item in enumerate(chosen)]


def exclusions(tasks: list[AgentTask], references: dict) -> dict[tuple[str, int], str]:
    """(task id, turn index) -> why that turn is not scored: its reference failed or
    returned no rows (any empty frame of the right columns would pass it)."""
    out = {}
    for task in tasks:
        for index, frame in enumerate(references[task.id]):
            if frame is None:
                out[(task.id, index)] = FAILED_REFERENCE
            elif len(frame) == 0:
                out[(task.id, index)] = EMPTY_REFERENCE
    return out


def reference_frames(tasks: list[AgentTask], sandbox) -> dict[str, list]:
    """The reference result of every turn of every task (None where the reference fails)."""
    jobs = [(turn.reference_code, task.params) for task in tasks for turn in task.turns]
    results = sandbox.run_many(jobs) if hasattr(sandbox, "run_many") else [sandbox.run(*j) for j in jobs]
    out, it = {}, iter(results)
    for task in tasks:
        out[task.id] = [r.result_frame if r.ok else None for r in (next(it) for _ in task.turns)]
    return out


def _counting(generate, on_calls, chunk: int | None, before_batch=None):
    """``generate`` reporting its model calls every ``chunk`` conversations.

    ``chunk`` is the generator's own batch size, so the batches (and with them greedy
    decoding's padding and outputs) are exactly those it would make alone.
    ``before_batch()``, if given, runs before each batch (an eval process takes freed cores there).
    """
    def call(conversations):
        out, step = [], chunk or max(1, len(conversations))
        for start in range(0, len(conversations), step):
            if before_batch is not None:
                before_batch()
            part = generate(conversations[start:start + step])
            on_calls(len(part))
            out += part
        return out
    return call


def eval_generator(model_dir: str | Path, tokenizer, max_new_tokens: int, batch_size: int,
                   copy_bias: float = 0.0, precision: str = "float32") -> HFGenerator:
    """An arm's model loaded in ``precision`` (the plan's ``eval { precision }``: ``float32`` or
    ``bf16``) and its greedy ``HFGenerator`` (benchmarks/pretrained_decoding.py times this
    against earlier code, benchmarks/cpu_bf16.py the two precisions)."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = {"float32": torch.float32, "bf16": torch.bfloat16}[precision]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    # Frozen weights: the shared system prompt's cache is kept across calls. No log-probs:
    # eval scores the text (``HFGenerator(logprobs=...)``).
    return HFGenerator(model, tokenizer, max_new_tokens=max_new_tokens, batch_size=batch_size, frozen=True,
                       copy_bias=copy_bias, logprobs=False)


def evaluate_arm(arm: str, model_dir: str | Path, tasks: list[AgentTask], references: dict, system_prompt: str,
                 sandbox, fmt=None, max_turns: int = 3, wording: TurnWording | None = None,
                 terms=None, max_new_tokens: int = 256, batch_size: int = 8, engine: str = "transformers",
                 catalog: ReferenceCatalog | None = None, progress: ArmProgress | None = None,
                 earlier_turns: str = "full", copy_bias: float = 0.0,
                 excluded: dict[tuple[str, int], str] | None = None, before_batch=None,
                 precision: str = "float32", repeat_temperature: float = 0.0, seed: int = 0) -> list:
    """Greedy episodes of one arm on ``tasks``, scored and their failures classified.

    ``engine`` is the plan's rollout engine; ``earlier_turns`` what later questions see of
    earlier turns (the plan's input builder); ``copy_bias`` the plan's ``eval { copy_bias }``
    (``runtime.agent.copy_bias``); ``precision`` its ``eval { precision }``; above 0,
    ``repeat_temperature`` decodes a repair that repeats failed code again, sampled from
    ``seed`` (``runtime.agent.repeats``); ``catalog``
    holds every workflow's reference texts (default: those of ``tasks``); ``progress`` is
    told of each model call batch and each finished episode; ``before_batch()`` runs before
    each batch of calls. Each episode is scored as soon as it ends, while its result frames
    are in memory; a turn in ``excluded`` keeps its reason and is not scored.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    resample = None
    if engine == "vllm":
        from runtime.agent import VLLMGenerator

        generate, chunk = VLLMGenerator(model_dir, tokenizer, max_new_tokens=max_new_tokens, copy_bias=copy_bias), None
        if repeat_temperature:
            resample = VLLMGenerator(model_dir, tokenizer, max_new_tokens=max_new_tokens, do_sample=True,
                                     temperature=repeat_temperature, copy_bias=copy_bias, seed=seed)
    else:
        generate = eval_generator(model_dir, tokenizer, max_new_tokens, batch_size, copy_bias, precision)
        chunk = batch_size
        if repeat_temperature:      # the same weights, sampled
            resample = HFGenerator(generate.model, tokenizer, max_new_tokens=max_new_tokens, do_sample=True,
                                   temperature=repeat_temperature, batch_size=batch_size, frozen=True,
                                   copy_bias=copy_bias, logprobs=False)
    if resample is not None:
        from runtime.agent.repeats import Resampler

        resample = Resampler(resample, seed)
    if progress is not None or before_batch is not None:
        generate = _counting(generate, progress.calls if progress is not None else (lambda n: None), chunk,
                             before_batch)
    catalog = catalog if catalog is not None else ReferenceCatalog.build(tasks)

    def ended(i: int, episode) -> None:
        task = tasks[i]
        score_episode(episode, task, references[task.id], terms)
        for turn in episode.turns:
            turn.excluded = (excluded or {}).get((task.id, turn.index), "")
        classify_episode(episode, task, references[task.id], catalog)
        if progress is not None:
            progress.episode(episode)

    return run_episodes(generate, tasks, system_prompt, sandbox, fmt, max_turns, wording, arm=arm, on_episode=ended,
                        earlier_turns=earlier_turns, resample=resample)


def split_summaries(episodes: list, seed: int = 0) -> dict[str, dict]:
    """Metrics over all episodes and per held-out split (only splits that have episodes)."""
    out = {"all": summarise(episodes, seed)}
    for split in SPLIT_ORDER:
        chosen = [e for e in episodes if e.split == split]
        if chosen:
            out[split] = summarise(chosen, seed)
    return out


def _sft_model(ctx, arm: str) -> Path:
    """The sft step trains both input modes with the same data and budget."""
    from runtime.step_context import StepError

    final = ctx.input_dir("sft") / arm / "final"
    if not (final / "config.json").is_file():
        raise StepError(f"the sft step left no `{arm}` model at {final}; rerun `craftc run PLAN --only sft`")
    return final


def cap_per_workflow(tasks: list, per_workflow: int) -> list:
    """At most ``eval.instances`` held-out instances per workflow and split, in file order.

    Distillation draws more instances than evaluation needs (it must fill the train
    split); the cap keeps every split and workflow represented at a fixed cost.
    """
    kept, seen = [], {}
    for task in tasks:
        key = (task.split, task.workflow)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= per_workflow:
            kept.append(task)
    return kept


def spread_per_split(tasks: list, limit: int | None) -> list:
    """At most ``eval.limit`` tasks per split, stratified over the split's workflows.

    Each split keeps one instance of as many workflows as the limit allows, then a second
    of each, and so on (instances of a workflow in file order). When the limit is below the
    number of workflows, the workflows kept are evenly spaced over the file's order, and a
    conversation (a task of two turns or more) is always among them when the split holds
    one: multi-turn coherence is measured on conversations only. Kept tasks keep their
    file order.

    >>> from types import SimpleNamespace as T
    >>> tasks = [T(split="eval_params", workflow=w, turns=(1,)) for w in "abcdef"]
    >>> tasks += [T(split="eval_params", workflow="chat", turns=(1, 2)), T(split="eval_workflows", workflow="g", turns=(1,))]
    >>> [t.workflow for t in spread_per_split(tasks, 3)]
    ['a', 'c', 'chat', 'g']
    >>> len(spread_per_split(tasks, None)) == len(tasks)
    True
    """
    if limit is None:
        return tasks
    by_split: dict[str, dict[str, list[int]]] = {}
    for index, task in enumerate(tasks):
        by_split.setdefault(task.split, {}).setdefault(task.workflow, []).append(index)
    keep: set[int] = set()
    for by_workflow in by_split.values():
        n = min(limit, sum(len(indices) for indices in by_workflow.values()))
        chosen, picked = _workflows_kept(by_workflow, tasks, n), []
        for round_ in range(n):                 # one more instance of each chosen workflow per round
            for workflow in chosen:
                if len(picked) < n and round_ < len(by_workflow[workflow]):
                    picked.append(by_workflow[workflow][round_])
        keep.update(picked)
    return [task for index, task in enumerate(tasks) if index in keep]


def _workflows_kept(by_workflow: dict[str, list[int]], tasks: list, n: int) -> list[str]:
    """The workflows of one split that keep an instance under a limit of ``n``, in file order:
    all of them when ``n`` allows; else ``n`` evenly spaced, one conversation among them."""
    workflows = list(by_workflow)
    if n >= len(workflows):
        return workflows
    picked = [workflows[(i * len(workflows)) // n] for i in range(n)]
    talks = [w for w in workflows if any(len(tasks[i].turns) > 1 for i in by_workflow[w])]
    if talks and not set(talks) & set(picked):
        picked[-1] = talks[0]               # a conversation instead of the last single-turn pick
    return [w for w in workflows if w in picked]


@dataclass
class EvalInputs:
    """What every arm's eval reads, assembled once from the plan and the run dir.

    The eval step and benchmarks/eval_batch.py build it the same way (:func:`eval_inputs`),
    so an arm timed by the benchmark is the arm the step runs.
    """

    split: str                      # dev or test
    held_out: list[AgentTask]       # every held-out instance of the split
    tasks: list[AgentTask]          # those scored: `instances` per workflow and kind, then `limit`
    limited: dict | None            # what `eval { limit N }` kept, for eval.json; None when it kept all
    builder: dict                   # the plan's specs/input_builder.json
    prompts: dict[str, str]         # arm -> its system prompt
    fmt: BlockFormat
    wording: TurnWording
    earlier_turns: str              # what later questions see of earlier turns
    terms: SchemaTerms
    max_new_tokens: int             # the grpo stage's, as rollouts decode
    engine: str                     # the rollout engine the plan chose
    catalog: ReferenceCatalog
    copy_bias: float
    batch: int
    precision: str                  # eval { precision }: the dtype the arms' weights decode in
    repeat_temperature: float       # eval { repeat_temperature }: 0 runs a repeated failed code as written
    seed: int                       # the run's seed: what a resampled repair draws from

    @property
    def max_turns(self) -> int:
        return self.builder["max_turns"]

    @property
    def user_turns(self) -> int:
        return sum(len(t.turns) for t in self.tasks)


def eval_inputs(ctx, announce: bool = True) -> EvalInputs:
    """The held-out tasks eval scores and how each arm is prompted and decodes; a clear
    ``StepError`` for an instance file or input builder the step cannot use. ``announce``:
    say on the console what ``eval { limit }`` kept (an eval process leaves that to the step)."""
    from craftc.ir import BlockFormat
    from runtime.agent.history import earlier_turns_of
    from runtime.agent.task import TaskFormatError
    from runtime.distill.step import input_builder
    from runtime.rewards import SchemaTerms
    from runtime.step_context import StepError
    from runtime.train.stages import grpo_stage

    recipe = ctx.plan.recipe
    dataset = ctx.input_dir("dataset")
    instances = next((p for p in (dataset / "dataset" / "eval_instances.json", dataset / "eval_instances.json")
                      if p.is_file()), dataset / "dataset" / "eval_instances.json")
    split = recipe.eval.split
    try:
        held_out = held_out_tasks(instances, split)
    except TaskFormatError as err:
        raise StepError(str(err)) from None
    tasks = cap_per_workflow(held_out, recipe.eval.instances)
    if not tasks:
        raise StepError(f"{instances} holds no {split} instances; raise `eval {{ holdout ... }}` in the recipe")
    limited = None                      # eval { limit N }: what it kept, for eval.json and the report
    kept = spread_per_split(tasks, recipe.eval.limit)
    if len(kept) < len(tasks):
        kinds = sorted({t.workflow for t in kept})
        talks = sum(len(t.turns) > 1 for t in kept)
        if announce:
            ctx.console.print(f"eval: `eval {{ limit {recipe.eval.limit} }}` keeps {len(kept)} of {len(tasks)} "
                              f"held-out instances (at most that many per split, spread over {len(kinds)} "
                              f"workflows; {talks} conversation{'s' * (talks != 1)})")
        limited, tasks = {"per_split": recipe.eval.limit, "held_out": len(tasks)}, kept
    # specs/input_builder.json says which input mode (system prompt) each arm gets.
    builder = input_builder(ctx)
    try:
        earlier_turns = earlier_turns_of(builder)
    except ValueError as err:
        raise StepError(str(err)) from None
    stage = grpo_stage(recipe)
    return EvalInputs(
        split=split, held_out=held_out, tasks=tasks, limited=limited, builder=builder,
        prompts={arm: ctx.artifact(builder["modes"][mode]["system_prompt"]).read_text()
                 for arm, mode in builder["eval_arms"].items()},
        fmt=BlockFormat(**builder["format"]), wording=TurnWording.from_file(ctx.artifact(builder["turn_template"])),
        earlier_turns=earlier_turns, terms=SchemaTerms.from_schema(recipe.schema_),
        max_new_tokens=stage.max_new_tokens, engine=stage.rollout, catalog=reference_catalog(ctx, held_out),
        copy_bias=recipe.eval.copy_bias, batch=recipe.eval.batch, precision=recipe.eval.precision,
        repeat_temperature=recipe.eval.repeat_temperature, seed=ctx.seed)


def eval_sandbox(ctx, tasks: list[AgentTask]):
    """The sandbox pool eval runs agent code in: eval's own limits, the gate's secret redaction."""
    from runtime.sandbox import SandboxLimits, SandboxPool, sandbox_workers
    from runtime.workflows import warmup_jobs

    recipe = ctx.plan.recipe
    limits = SandboxLimits(secret_env=recipe.gates.execution.secret_env)
    return SandboxPool(sandbox_workers(recipe, ctx.console), ctx.input_dir("world") / "warehouse.duckdb", limits,
                       "runtime.world.api:WarehouseApi", warmup=warmup_jobs(tasks))


def run_arm(inputs: EvalInputs, arm: str, model_dir: Path, sandbox, references: dict, excluded: dict,
            progress: ArmProgress | None = None, batch_size: int | None = None, before_batch=None) -> list:
    """One arm's greedy episodes on the inputs' tasks, as the eval step runs them."""
    return evaluate_arm(arm, model_dir, inputs.tasks, references, inputs.prompts[arm], sandbox, inputs.fmt,
                        inputs.max_turns, inputs.wording, inputs.terms, inputs.max_new_tokens, engine=inputs.engine,
                        catalog=inputs.catalog, progress=progress, earlier_turns=inputs.earlier_turns,
                        copy_bias=inputs.copy_bias, batch_size=batch_size or inputs.batch, excluded=excluded,
                        before_batch=before_batch, precision=inputs.precision,
                        repeat_temperature=inputs.repeat_temperature, seed=inputs.seed)


def arm_model(ctx, arm: str) -> Path:
    """The trained model an arm decodes with: GRPO's for craft, the sft step's for the others."""
    sft_arm, after_grpo = EVAL_ARM_MODELS[arm]
    return ctx.input_dir("grpo") / "final" if after_grpo else _sft_model(ctx, sft_arm)


def decode_arm(ctx, inputs: EvalInputs, arm: str, sandbox, references: dict, excluded: dict,
               before_batch=None, decoded_elsewhere: bool = False, read_back: list | None = None) -> list:
    """The arm's episodes: read back if they are saved already, else decoded and saved.

    They are saved already when an interrupted run of this step finished the arm (``read_back``
    when the step has read them already), or when an eval process decoded it
    (``decoded_elsewhere``, ``runtime.eval.processes``).
    """
    episodes_dir = ctx.out_dir / "episodes"
    done, why_not = (read_back, "") if read_back is not None else \
        finished_arm(episodes_dir, arm, [t.id for t in inputs.tasks])
    if done is not None:
        if not decoded_elsewhere:
            ctx.console.print(f"eval: arm {arm}: its {len(done)} episodes were finished by the interrupted run, "
                              "so they are read back, not decoded again")
        return done
    if why_not:
        ctx.console.print(f"[yellow]![/] eval: arm {arm}: {why_not}; decoding the arm again")
    elif decoded_elsewhere:     # not expected: the process exited 0 without writing the arm
        ctx.console.print(f"[yellow]![/] eval: arm {arm}: its eval process left no episode file; decoding it here")
    ctx.console.print(f"eval: arm {arm} on {len(inputs.tasks)} instances")
    with ArmProgress(ctx.console, arm, len(inputs.tasks), inputs.user_turns, inputs.max_turns) as progress:
        episodes = run_arm(inputs, arm, arm_model(ctx, arm), sandbox, references, excluded, progress,
                           before_batch=before_batch)
    write_arm(episodes_dir, arm, episodes)
    return episodes


def trained_answer_room(ctx, inputs: EvalInputs) -> dict[str, dict]:
    """``max_new_tokens`` against the answers each arm's SFT data holds, in the arm's tokens
    (runtime.agent.answer_room): ``{arm: room}``, each short one said on the console before
    any arm decodes. An arm whose dataset or model is not on disk is left out."""
    from transformers import AutoTokenizer

    from runtime.agent.answer_room import answer_room, room_warning, trained_answer_lengths
    from runtime.layout import DATASET_DIR, SFT_ARMS
    from runtime.step_context import StepError

    rooms, seen = {}, {}
    for arm in ctx.plan.recipe.eval.arms:
        mode = SFT_ARMS[EVAL_ARM_MODELS[arm][0]]
        dataset = ctx.input(DATASET_DIR) / mode
        if not dataset.is_dir():
            continue
        if mode not in seen:            # craft and sft_only trained on the same answers
            try:
                tokenizer = AutoTokenizer.from_pretrained(arm_model(ctx, arm))
            except (StepError, OSError):
                continue                # no model to read: the arm's decode says what is missing
            seen[mode] = answer_room(trained_answer_lengths(dataset, tokenizer), inputs.max_new_tokens)
            warning = room_warning(seen[mode], f"answers the {mode} SFT data holds")
            if warning:
                ctx.console.print(f"[yellow]![/] eval: {warning}")
        rooms[arm] = seen[mode]
    return rooms


def _finished(ctx, inputs: EvalInputs) -> dict[str, list]:
    """The episodes of each arm an interrupted run of this step finished, read once."""
    ids = [t.id for t in inputs.tasks]
    found = {arm: finished_arm(ctx.out_dir / "episodes", arm, ids)[0] for arm in ctx.plan.recipe.eval.arms}
    return {arm: episodes for arm, episodes in found.items() if episodes is not None}


def run_eval(ctx):
    """Evaluate every arm of the recipe on the held-out instances.

    Each arm's episodes are saved as soon as it finishes; rerun after an interruption
    (the runner keeps this step's staging dir when its inputs are unchanged), the
    finished arms are read back and only the others decode. With ``eval { processes N }``
    the unfinished arms first decode in N processes at once (``runtime.eval.processes``),
    each writing its arms' files, and are read back here the same way.
    """
    from runtime.step_context import StepResult

    recipe = ctx.plan.recipe
    inputs = eval_inputs(ctx)
    if inputs.engine == "vllm":        # evaluation generates with the engine the plan chose for rollouts
        from runtime.step_context import StepError
        from runtime.train.launch import PreflightError, preflight

        try:
            preflight({"parallel": "none", "gpus": 0, "rollout": "vllm"})
        except PreflightError as exc:
            raise StepError(f"eval generates with `rollout vllm` as the plan says, and cannot here: {exc}") from None
    if recipe.eval.precision == "bf16" and inputs.engine == "transformers":
        from runtime.train.precision import warn_software_bf16

        warn_software_bf16(ctx.console, "eval")
    if recipe.eval.copy_bias:
        ctx.console.print(f"eval: every arm decodes with `copy_bias {recipe.eval.copy_bias:g}` (the asked words' "
                          "logits raised; docs/evaluation.md, \"Copy bias\")")
    tasks, split = inputs.tasks, inputs.split
    rooms = trained_answer_room(ctx, inputs)
    results, by_workflow, failures, cut_off = {}, {}, {}, {}
    with eval_sandbox(ctx, tasks) as sandbox:
        references = reference_frames(tasks, sandbox)
        excluded = exclusions(tasks, references)
        turns = inputs.user_turns
        ctx.console.print(f"eval: split {split}: {len(tasks)} instances, {turns} user turns, {turns - len(excluded)} "
                          f"scored ({len(excluded)} whose reference returns no rows or fails are run, not scored)")
        finished, elsewhere = {}, set()
        if recipe.eval.processes > 1:
            finished = _finished(ctx, inputs)
            elsewhere = decode_side_by_side(ctx, inputs, [arm for arm in recipe.eval.arms if arm not in finished])
        for arm in recipe.eval.arms:
            episodes = decode_arm(ctx, inputs, arm, sandbox, references, excluded,
                                  decoded_elsewhere=arm in elsewhere, read_back=finished.get(arm))
            results[arm] = split_summaries(episodes, ctx.seed)
            by_workflow[arm], failures[arm] = per_workflow(episodes), failure_summary(episodes)
            cut_off[arm] = cut_off_counts(episodes)
            if cut_off[arm]["cut_off"]:
                ctx.console.print(f"[yellow]![/] eval: arm {arm}: {cut_off_line(cut_off[arm], inputs.max_new_tokens)}")
    report = {"arms": list(recipe.eval.arms), "instances": len(tasks), "results": results,
              "split": {"name": split, "instances": len(tasks), "turns": turns, "scored_turns": turns - len(excluded),
                        "clusters": "instance",
                        "excluded": [{"instance_id": k[0], "turn": k[1] + 1, "reason": v}
                                     for k, v in sorted(excluded.items())]},
              "per_workflow": by_workflow, "failures": failures,
              # How the calls fit in the tokens they were given, and how the trained answers do.
              "max_new_tokens": inputs.max_new_tokens, "cut_off": cut_off, "answer_room": rooms,
              "prompts": inputs.builder["eval_arms"],
              "stuffed_training": "sft step, the same stage settings on dataset/stuffed"}
    if inputs.limited is not None:
        report["limit"] = inputs.limited
    # Workflows with no scored turn, and why: report.md names them.
    report["not_evaluated"] = not_evaluated([w.name for w in recipe.workflows], inputs.held_out, tasks, excluded,
                                            split, recipe.eval.limit if inputs.limited is not None else None)
    if inputs.earlier_turns != "full":  # what follow-up calls saw of earlier turns, and so paid for
        report["earlier_turns"] = inputs.earlier_turns
    for setting in EVAL_DECODING:   # how every arm decoded, where the plan moved it
        if getattr(recipe.eval, setting) != EvalSpec.model_fields[setting].default:
            report[setting] = getattr(recipe.eval, setting)
    outputs = []
    if recipe.eval.general:
        report["general"] = general_skills(ctx, {arm: arm_model(ctx, arm) for arm in recipe.eval.arms})
        outputs.append("general.md")
    (ctx.out_dir / "eval.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    flat = {f"{arm}.{m}": v["value"] for arm, r in results.items() for m, v in r["all"].items()}
    flat["sandbox_redacted"] = sandbox.redactions  # secret values cut out of tool output (docs/sandbox.md)
    for arm, changes in report.get("general", {}).get("changes", {}).items():
        flat.update({f"general.{arm}.{task}.delta": c["delta"] for task, c in changes.items()})
    return StepResult(metrics=flat, outputs=("eval.json", *outputs, *[f"episodes/{a}.jsonl" for a in results]))


def reference_catalog(ctx, tasks: list[AgentTask]) -> ReferenceCatalog:
    """Every workflow's reference texts, for telling an answer to another workflow.

    The held-out file (before the per-workflow cap) carries references for most
    workflows; a workflow it lacks is read from its solution files in the plan.
    """
    catalog = ReferenceCatalog.build(tasks)
    missing = {wf.name: [ctx.artifact(t.solution).read_text(encoding="utf-8") for t in wf.turns if t.solution]
               for wf in ctx.plan.recipe.workflows if wf.name not in catalog.texts}
    return ReferenceCatalog.build(tasks, missing) if missing else catalog


def base_model(ctx) -> Path:
    """The model the trained arms started from: the sft step's built tiny_moe, or the declared base."""
    from runtime.train.stages import sft_stage

    recipe = ctx.plan.recipe
    stage = sft_stage(recipe)
    spec = next((m for m in recipe.models if m.name == stage.base), None)
    if spec is None or spec.source == "tiny_moe":
        return ctx.input_dir("sft") / "base"
    return Path(spec.path or spec.name)


def general_skills(ctx, trained: dict) -> dict:
    """``eval { general ... }``: lm-eval benchmarks on the base and each trained arm, with deltas."""
    from runtime.eval.general import GeneralEvalError, general_markdown, run_general
    from runtime.step_context import StepError

    spec = ctx.plan.recipe.eval
    models = {"base": base_model(ctx), **trained}
    try:
        report = run_general(models, spec.general, spec.general_include, spec.general_limit, ctx.seed,
                             log=ctx.console.print)
    except GeneralEvalError as err:
        raise StepError(str(err)) from None
    (ctx.out_dir / "general.md").write_text(general_markdown(report))
    return report
