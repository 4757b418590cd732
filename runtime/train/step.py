"""The `sft` step: build or locate the base model, then Stage I SFT for each arm.

Two models come out of this step, trained with the same accepted data, the same
settings and the same budget:

* ``craft``: schema-stripped input (the recipe's Stage I), and
* ``stuffed``: the schema-stuffed baseline (full DDL and API docs in every prompt),

so the eval step compares input modes and nothing else. Each arm trains through the
plan's ``stages/<stage>/launch.sh`` with a step config written into the step dir
(``<arm>_config.json``, paths relative to itself); the command is printed before it
runs. Under ``craftc run --no-launch`` the step writes the configs and prints the
commands instead, for a user to launch on another machine (docs/training.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from craftc.ir import ModelSpec, Stage
from runtime.layout import CORPUS, DATASET_DIR, FINAL, MANIFEST, SFT_ARMS, SFT_BASE, SFT_SUMMARY, sft_final
from runtime.step_context import StepContext, StepError, StepResult
from runtime.tracking import run_name
from runtime.train.curriculum import CurriculumError, no_warm_up_reason, read_curriculum, warm_up_parts
from runtime.train.precision import warn_stage_software_bf16
from runtime.train.schema_docs import SchemaDocsError, read_schema_docs
from runtime.train.stages import replicate_seeds, sft_stage

__all__ = ["run_sft_step", "adopt_sft_step", "base_model_dir", "planned_tokens", "token_matched_steps",
           "arm_max_length", "truncation_warning"]

ARMS = tuple(SFT_ARMS.items())          # (arm, dataset mode)


def trained_arms(recipe) -> tuple[tuple[str, str], ...]:
    """The (arm, dataset mode) pairs the sft step trains: the stuffed baseline only when eval
    compares against it (`eval { baseline none }` drops it from both).

    >>> from types import SimpleNamespace as NS
    >>> trained_arms(NS(eval=NS(arms=("craft", "sft_only"))))
    (('craft', 'stripped'),)
    """
    return tuple((arm, mode) for arm, mode in ARMS if arm != "stuffed" or "stuffed" in recipe.eval.arms)


def _model_spec(ctx: StepContext, stage: Stage) -> ModelSpec | None:
    return next((spec for spec in ctx.plan.recipe.models if spec.name == stage.base), None)


def base_model_dir(ctx: StepContext, stage: Stage, corpus: Path) -> Path:
    """The embedded tiny_moe is built from the recipe's corpus; real bases are located."""
    from runtime.train.tiny_moe import SPEC_FIELDS, build_tiny_moe

    spec = _model_spec(ctx, stage)
    if spec is None:
        raise StepError(f"stage `{stage.name}` names base model `{stage.base}`, which the plan does not declare; "
                        "recompile the recipe")
    if spec.source == "tiny_moe":
        texts = corpus.read_text(encoding="utf-8").split("\n\n")
        ctx.console.print(f"building tiny_moe base ({spec.hidden} hidden, {spec.layers} layers, "
                          f"{spec.experts} experts) with a tokenizer trained on the recipe corpus")
        sizes = {name: getattr(spec, name) for name in SPEC_FIELDS}
        return build_tiny_moe(ctx.out_dir / SFT_BASE.path, texts, {**sizes, "seed": spec.seed + ctx.seed})
    if spec.source == "gguf":
        from runtime.train.pretrained import GGUFError, convert_gguf, resolve_gguf

        try:
            gguf_file = resolve_gguf(spec.path or spec.name)
            ctx.console.print(f"converting {gguf_file.name} into a model directory (once per run dir)")
            return convert_gguf(gguf_file, ctx.out_dir / SFT_BASE.path)
        except GGUFError as exc:
            raise StepError(str(exc)) from None
    path = Path(spec.path or spec.name)
    if spec.source == "path" and not (path / "config.json").exists():
        raise StepError(f"base model `{spec.name}`: no model directory at `{path}` (config.json missing); "
                        "point the profile's `model { path \"...\" }` at a saved Hugging Face model dir")
    return path


class ExampleLengths(NamedTuple):
    """Token counts of a dataset's examples, and what its warm-up leaves out (`example_lengths`)."""

    whole: list[int]      # each conversation
    cuts: list[int]       # each warm-up example, renamed first turns included
    without: int          # conversations that give no warm-up example
    renamed: int          # of `cuts`, renamed first turns (`prefix_renames`)
    not_renamed: int      # conversations with a warm-up but no renamed copy (renames asked)


def example_lengths(model_dir: Path, dataset_dir: Path, curriculum: dict | None = None) -> ExampleLengths:
    """Tokens of each conversation, and of each warm-up example of `curriculum`
    (runtime.train.curriculum; none without it), rendered with the model's own chat template."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    records = load_from_disk(str(dataset_dir)).to_list()     # decoded once, read twice
    rows = [record["messages"] for record in records]
    parts = [warm_up_parts(record, curriculum) for record in records] if curriculum else []
    cuts, renamed = [cut for cut, _ in parts], [new for _, new in parts]

    def lengths(conversations: list[list[dict]]) -> list[int]:
        # What apply_chat_template(tokenize=True) counts, in batches: the fast tokenizer encodes
        # a batch on every core (the stuffed arm's ~5,000-token examples took half a minute one
        # by one), and a batch at a time keeps the ids of only that batch in memory.
        out = []
        for start in range(0, len(conversations), 256):
            texts = [tokenizer.apply_chat_template(m, tokenize=False) for m in conversations[start:start + 256]]
            out += token_counts(tokenizer, texts)
        return out

    # The trainer's order (curriculum.warm_up_examples): a row's cuts, then its renamed turns.
    examples = [example for cut, new in zip(cuts, renamed) for example in cut + new]
    asked = bool(curriculum and curriculum.get("renames"))
    return ExampleLengths(lengths(rows), lengths(examples),
                          sum(1 for cut in cuts if not cut), sum(len(new) for new in renamed),
                          sum(1 for cut, new in zip(cuts, renamed) if asked and cut and not new))


# A shared head shorter than this (characters) is not worth the separate count.
MIN_SHARED_HEAD = 1000


def shared_head(texts: list[str], special: list[str]) -> str:
    """The longest start every text shares that ends with one of the ``special`` tokens ('' if none).

    >>> shared_head(["<s>schema</s> q1", "<s>schema</s> q22"], ["<s>", "</s>"])
    '<s>schema</s>'
    >>> shared_head(["<s>a", "<t>b"], ["<s>"])
    ''
    """
    import os

    common = os.path.commonprefix(texts) if texts else ""
    return common[:max((common.rfind(token) + len(token) for token in special if token in common), default=0)]


def token_counts(tokenizer, texts: list[str]) -> list[int]:
    """Tokens of each text (no special tokens added), a head all of them share counted once.

    The stuffed arm's texts all start with the same ~5,000-token schema prompt; its turn ends
    with a special token, where the tokenizer splits before anything else, so the head's
    tokens and the rest's add up to the whole text's. That is checked on the batch's first
    text (its rest starts as every other's does); where it does not hold, every text is
    tokenized whole.
    """
    special = [t for t in tokenizer.all_special_tokens if t] + [t.content for t in tokenizer.added_tokens_decoder.values()]
    head = shared_head(texts, special)
    if len(head) >= MIN_SHARED_HEAD:
        head_tokens = len(tokenizer(head, add_special_tokens=False)["input_ids"])
        rest = [len(ids) for ids in tokenizer([t[len(head):] for t in texts], add_special_tokens=False)["input_ids"]]
        if head_tokens + rest[0] == len(tokenizer(texts[0], add_special_tokens=False)["input_ids"]):
            return [head_tokens + n for n in rest]
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def planned_tokens(lengths: list[int], max_length: int, trl_kwargs: dict, examples_per_step: int) -> int:
    """Training tokens a run of these settings will see (TRL's `num_tokens`), before it runs.

    Example:
        >>> planned_tokens([100, 300], 200, {"max_steps": -1, "num_train_epochs": 2.0}, 1)
        600
        >>> planned_tokens([100, 300], 200, {"max_steps": 3, "num_train_epochs": 2.0}, 2)
        900
    """
    kept = [min(n, max_length) for n in lengths]
    if trl_kwargs["max_steps"] > 0:
        return round(trl_kwargs["max_steps"] * examples_per_step * sum(kept) / max(len(kept), 1))
    return round(trl_kwargs["num_train_epochs"] * sum(kept))


def token_matched_steps(stripped_tokens: int, stuffed_lengths: list[int], examples_per_step: int) -> int:
    """Optimiser steps that give the stuffed arm the stripped arm's training tokens.

    Example:
        >>> token_matched_steps(100_000, [5_000] * 10, 4)
        5
    """
    mean = sum(stuffed_lengths) / max(len(stuffed_lengths), 1)
    return max(1, round(stripped_tokens / (mean * examples_per_step)))


def arm_max_length(stage_max: int, context: int, longest: int, longest_stripped: int) -> int:
    """The stripped arm keeps the recipe's `max_length`; the stuffed arm gets the same
    room for the conversation plus the extra tokens its schema-stuffed prompt takes, so
    both arms train on the same content (capped by the model's context)."""
    overhead = max(longest - longest_stripped, 0)
    return min(max(stage_max, 1) + overhead, context)


def truncation_warning(arm: str, lengths: list[int], max_length: int, drawn_from: int | None = None) -> str | None:
    """What TRL's truncation to ``max_length`` takes from the examples one arm trains, or None.

    TRL keeps the start of a longer example, so the end of the conversation (its later
    turns) is never trained: the count and the share of tokens say how much. ``drawn_from``
    is the dataset's size when a run of ``max_steps`` trains a draw of it (``lengths``).

    Example:
        >>> truncation_warning("craft", [100, 300, 500], 200)
        'craft: 2 of 3 examples are longer than max_length 200 (the longest 500 tokens); TRL keeps their start, so 400 of their tokens (44.4% of 900) are not trained; raise `max_length` to train them'
        >>> truncation_warning("craft", [300, 100], 200, drawn_from=9)[:82]
        'craft: 1 of the 2 examples this run trains (a draw of 9) is longer than max_length'
        >>> truncation_warning("craft", [100, 200], 200) is None
        True
    """
    over = [n for n in lengths if n > max_length]
    if not over:
        return None
    cut = sum(n - max_length for n in over)
    verb = "are" if len(over) > 1 else "is"
    examples = (f"{len(lengths)} examples" if drawn_from is None
                else f"the {len(lengths)} examples this run trains (a draw of {drawn_from:,})")
    return (f"{arm}: {len(over)} of {examples} {verb} longer than max_length {max_length} (the longest "
            f"{max(over)} tokens); TRL keeps their start, so {cut:,} of their tokens ({100 * cut / sum(lengths):.1f}% "
            f"of {sum(lengths):,}) are not trained; raise `max_length` to train them")


def _trained_lengths(lengths: list[int], trl_kwargs: dict, overrides: dict, per_step: int,
                     stage) -> tuple[list[int], int | None]:
    """``(lengths of the examples the arm's main phase trains, the dataset's size or None)``:
    a run of `max_steps` short of one pass trains the trainer's seeded draw (``rows_reached``).
    Question dropout rewrites the rows into passes first, so there every row is counted."""
    from runtime.train.sft import rows_reached

    settings = {**trl_kwargs, **overrides}
    steps = settings["max_steps"]
    seed = settings["data_seed"] if settings.get("data_seed") is not None else settings["seed"]   # the plan writes both
    rows = None if stage.question_dropout else rows_reached(len(lengths), steps, per_step, seed)
    return (lengths, None) if rows is None else ([lengths[i] for i in rows], len(lengths))


def _num_processes(accelerate_yaml: Path) -> int:
    import yaml

    return int((yaml.safe_load(accelerate_yaml.read_text(encoding="utf-8")) or {})["num_processes"])


def _relative(path: Path, start: Path) -> str:
    import os

    return Path(os.path.relpath(path, start)).as_posix()


def run_sft_step(ctx: StepContext) -> StepResult:
    from runtime.train.launch import PreflightError, launch_stage, launch_stages_concurrently, preflight

    stage = sft_stage(ctx.plan.recipe)
    arms = trained_arms(ctx.plan.recipe)
    warn_stage_software_bf16(ctx, stage)
    data_dir = ctx.input(DATASET_DIR)
    model_dir = base_model_dir(ctx, stage, ctx.input(CORPUS))
    trl_kwargs = json.loads(ctx.artifact(f"stages/{stage.name}/trl_config.json").read_text(encoding="utf-8"))
    ctx.artifact("specs/masking.json")               # read by the trainer, which the step launches
    if stage.lora is not None:
        ctx.artifact(f"stages/{stage.name}/peft_config.json")   # the trainer's LoraConfig
    if stage.sampler != "random":
        ctx.artifact(f"stages/{stage.name}/batches.json")       # the trainer's sampler (runtime.train.prefix_sampler)
    if stage.schema_docs:
        ctx.artifact(f"stages/{stage.name}/schema_docs.json")   # the trainer's first pass (runtime.train.schema_docs)
        try:
            docs = read_schema_docs(ctx.plan_dir, stage.name)
        except SchemaDocsError as exc:
            raise StepError(str(exc)) from None
        ctx.console.print(f"sft: schema docs: {docs['passes']:g} passes over {len(docs['examples'])} examples (an "
                          "entity's commented DDL each, and the metrics) before the rest of SFT, in every arm")
    curriculum = None
    if stage.prefix_epochs or stage.question_dropout:
        # the trainer's warm-up and question dropout; read here for the stuffed arm's token budget
        ctx.artifact(f"stages/{stage.name}/curriculum.json")
        try:
            curriculum = read_curriculum(ctx.plan_dir, stage.name)
        except CurriculumError as exc:
            raise StepError(str(exc)) from None
        if curriculum is not None and curriculum["question_dropout"]:
            ctx.console.print(f"sft: question dropout {curriculum['question_dropout']:.0%}: in every pass, two "
                              "thirds of the training questions lose that share of their words (not their "
                              "parameter values); planned tokens count the questions as written")
        if curriculum is not None and not curriculum["prefix_epochs"]:
            curriculum = None        # no warm-up to plan
    processes = _num_processes(ctx.artifact(f"stages/{stage.name}/accelerate.yaml"))
    if ctx.launch:
        try:
            preflight({"parallel": stage.parallel, "gpus": stage.gpus, "rollout": "transformers"}, model_dir)
        except PreflightError as exc:
            raise StepError(f"stage `{stage.name}` cannot train on this machine: {exc}; or prepare it with "
                            "`craftc run --no-launch` and run its launch.sh where it can") from None

    metrics: dict = {"base_model": SFT_BASE.path if model_dir.is_relative_to(ctx.out_dir) else stage.base,
                     "launch": "step" if ctx.launch else "manual"}
    context = _model_spec(ctx, stage).context
    cut_after = curriculum["cut_after"] if curriculum else None
    try:
        measured = {mode: example_lengths(model_dir, data_dir / mode, curriculum) for _, mode in arms}
    except CurriculumError as exc:
        raise StepError(str(exc)) from None
    lengths = {mode: counts.whole for mode, counts in measured.items()}
    longest = {mode: max(values, default=0) for mode, values in lengths.items()}
    budget = ctx.plan.recipe.eval.baseline_budget
    per_step = trl_kwargs["per_device_train_batch_size"] * trl_kwargs["gradient_accumulation_steps"] * processes
    stripped_tokens = planned_tokens(lengths["stripped"], trl_kwargs["max_length"], trl_kwargs, per_step)
    metrics.update(baseline_budget=budget, planned_stripped_tokens=stripped_tokens, commands={})
    prefix_tokens = None
    if curriculum is not None:
        prefix_lengths = {mode: counts.cuts for mode, counts in measured.items()}
        if not prefix_lengths["stripped"]:
            raise StepError(f"stage `{stage.name}` asks for `prefix_epochs {curriculum['prefix_epochs']:g}`, but no "
                            f"conversation in {data_dir} gives a warm-up example: {no_warm_up_reason(curriculum)}; "
                            "write the reasoning block in the teacher's trajectories, or remove `prefix_epochs`")
        without = measured["stripped"].without
        if without:
            # Not lost from training (the whole-conversation phase still trains them), but
            # the warm-up a reviewer reads in the plan skips them: say so.
            warning = (f"{without} of {len(lengths['stripped'])} conversations give no warm-up example "
                       f"({no_warm_up_reason(curriculum)}); only the whole-conversation phase trains them")
            ctx.console.print(f"[yellow]![/] sft: {warning}")
            metrics.setdefault("warnings", []).append(warning)
        prefix_kwargs = {"max_steps": -1, "num_train_epochs": curriculum["prefix_epochs"]}
        prefix_tokens = planned_tokens(prefix_lengths["stripped"], trl_kwargs["max_length"], prefix_kwargs, per_step)
        metrics.update(prefix_examples=len(prefix_lengths["stripped"]), planned_stripped_prefix_tokens=prefix_tokens)
        if curriculum["renames"]:
            counted = measured["stripped"]
            metrics.update(prefix_renamed_examples=counted.renamed, conversations_without_renames=counted.not_renamed)
            # Not lost either: such a conversation's first question names none of its names.
            through = " through their code" if curriculum["renames_cut_after"] != curriculum["cut_after"] else ""
            ctx.console.print(f"sft: warm-up: {len(counted.cuts):,} examples, {counted.renamed:,} of them renamed "
                              f"first turns{through} (`prefix_renames {curriculum['renames']}`); {counted.not_renamed:,} "
                              "conversations get no renamed copy: their first question names none of their names")
    configs: dict[str, Path] = {}
    if len(arms) < len(ARMS):
        ctx.console.print("sft: no stuffed baseline arm (`eval { baseline none }`)")
    metrics["arms"] = [arm for arm, _ in arms]
    for arm, mode in arms:
        max_length = arm_max_length(trl_kwargs["max_length"], context, longest[mode], longest["stripped"])
        # The two values the step measures instead of compiling; the config records them.
        overrides = {"max_length": max_length}
        overrides.update(replicate_seeds(trl_kwargs, ctx.seed))     # a replicate: its own seeds
        if "run_name" not in trl_kwargs:
            overrides["run_name"] = run_name(ctx.plan.recipe.name, stage.name, ctx.plan.content_hash, arm)
        prefix_overrides = None
        if arm == "stuffed" and budget == "tokens":
            overrides["max_steps"] = token_matched_steps(stripped_tokens, lengths[mode], per_step)
            metrics["stuffed_max_steps"] = overrides["max_steps"]
            ctx.console.print(f"stuffed baseline: {overrides['max_steps']} steps, the stripped arm's "
                              f"{stripped_tokens:,} planned training tokens (baseline_budget tokens)")
            if prefix_tokens is not None:
                prefix_overrides = {"max_steps": token_matched_steps(prefix_tokens, prefix_lengths[mode], per_step)}
                metrics["stuffed_prefix_max_steps"] = prefix_overrides["max_steps"]
                ctx.console.print(f"stuffed baseline warm-up: {prefix_overrides['max_steps']} steps, the stripped "
                                  f"arm's {prefix_tokens:,} planned warm-up tokens")
        metrics[f"{arm}_longest_example_tokens"] = longest[mode]
        metrics[f"{arm}_max_length"] = max_length
        trained, drawn_from = _trained_lengths(lengths[mode], trl_kwargs, overrides, per_step, stage)
        truncated = truncation_warning(arm, trained, max_length, drawn_from)
        if truncated:
            ctx.console.print(f"[yellow]![/] sft: {truncated}")
            metrics.setdefault("warnings", []).append(truncated)
        config_path = ctx.out_dir / f"{arm}_config.json"
        config = {"model_dir": _relative(model_dir.resolve(), ctx.out_dir.resolve()),
                  "dataset_dir": _relative((data_dir / mode).resolve(), ctx.out_dir.resolve()),
                  "out_dir": arm, "trl_overrides": overrides, "checkpoint_every_s": stage.checkpoint_every_s}
        if prefix_overrides is not None:
            config["prefix_overrides"] = prefix_overrides
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        configs[arm] = config_path
        if stage.arms == "sequential":
            ctx.console.print(f"[bold]{arm}[/] ({mode} input)")
            metrics["commands"][arm] = launch_stage(ctx, "sft", stage.name, config_path)
    if stage.arms == "concurrent":
        # The stuffed arm, on the longest examples, is the one still training when the other
        # ends (its attention costs more per token); it takes the freed cores.
        metrics["commands"] = launch_stages_concurrently(ctx, "sft", stage.name, configs, processes,
                                                         takers=tuple(a for a, mode in arms if mode == "stuffed"))
    if ctx.launch:
        metrics.update({arm: _arm_summary(ctx, ctx.out_dir, arm) for arm, _ in arms})
    return StepResult(metrics=metrics, outputs=tuple(sft_final(arm).path for arm, _ in arms) if ctx.launch else ())


def _arm_summary(ctx: StepContext, step_dir: Path, arm: str) -> dict:
    summary_path = step_dir / arm / SFT_SUMMARY
    if not (summary_path.is_file() and (step_dir / arm / FINAL).is_dir()):
        raise StepError(f"SFT of the `{arm}` arm has no {summary_path.name} and final/ in {step_dir / arm}; "
                        f"run `bash {ctx.plan_dir}/stages/<stage>/launch.sh {step_dir}/{arm}_config.json`, "
                        f"or rerun `craftc run {ctx.plan_dir} --only sft`")
    return json.loads(summary_path.read_text(encoding="utf-8"))


def adopt_sft_step(ctx: StepContext, step_dir: Path) -> dict:
    """The metrics of an sft step prepared with `--no-launch` and trained by hand."""
    manifest = json.loads((step_dir / MANIFEST).read_text(encoding="utf-8"))
    return {**manifest["metrics"], **{arm: _arm_summary(ctx, step_dir, arm) for arm, _ in trained_arms(ctx.plan.recipe)}}
