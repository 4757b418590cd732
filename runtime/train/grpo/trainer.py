"""The training run: TRL's ``GRPOTrainer`` on the job's rows, measured before and after.

``train_grpo`` builds the rows in a sandbox pool, measures the policy, trains with
``GRPOConfig(**trl_config)`` exactly as compiled (resuming from the last checkpoint
in the output dir), measures again and writes ``final``, ``metrics.jsonl``, the reward
curves, the measured rows' score over the steps and ``grpo_summary.json``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from craftc.atomic import replace_dir, write_atomic
from runtime.layout import ADAPTER, FINAL, GRPO_SUMMARY
from runtime.train.grpo.job import GRPOJob, GRPOSetupError, json_text, reward_llm_judge, reward_spec, schema_terms
from runtime.train.grpo.measuring import (BEFORE_FILE, before_key, measure, measure_every_callback, measured_before,
                                          measured_curve, paired_change)
from runtime.train.grpo.plots import plot_curves, plot_measured
from runtime.train.grpo.rewards import OUTCOME, make_reward_funcs, score_episode
from runtime.train.grpo.rollout import DynamicSampling, make_rollout_func, rollout_copy_bias
from runtime.train.grpo.rows import (build_rows, completion_room, load_measure_tasks, load_training_tasks,
                                     outcome_sources)
from runtime.train.loss_head import score_trained_positions_in
from runtime.train.resume import train_from
from runtime.train.timed_checkpoints import timed_checkpoints
from runtime.train.precision import load_for_training

__all__ = ["grpo_config", "is_main_process", "prepare_scoring", "train_grpo"]


def grpo_config(job: GRPOJob):
    """``GRPOConfig(**trl_config)``: the plan's TRL settings as compiled, plus the output dir."""
    from trl import GRPOConfig

    from runtime.train.version_fit import fitted_config

    try:
        return fitted_config(GRPOConfig, job.trl, output_dir=str(Path(job.out_dir) / "checkpoints"))
    except TypeError as exc:
        raise GRPOSetupError(f"the plan's trl_config.json does not fit this TRL version: {exc}; "
                             "recompile the recipe with the craft installed here") from None


def prepare_scoring(trainer, job: GRPOJob) -> dict:
    """How ``trainer`` scores completions, set up as the plan says; returns what was set up.

    On CPU, completions are scored without projecting their prompts (runtime.train.loss_head).
    With ``shared_prefix on`` every log-prob forward runs each group's prompt once
    (runtime.train.grpo.prompt_groups).
    """
    from runtime.train.grpo.prompt_groups import score_group_prompts_once
    from runtime.train.prefix_groups import SharedPrefixError

    done = {"cpu_head": score_trained_positions_in(trainer, trainer.temperature), "shared_prefix": False}
    if job.stage["shared_prefix"] == "on":
        try:
            score_group_prompts_once(trainer)
        except SharedPrefixError as exc:
            raise GRPOSetupError(f"`shared_prefix on`: {exc}") from None
        done["shared_prefix"] = True
    return done


def _callbacks(job, measure_policy) -> list | None:
    """The dev measurement every `measure_every` steps, and saves by training time (`checkpoint_every`)."""
    found = []
    if job.stage["measure_every"]:
        found.append(measure_every_callback(job.stage["measure_every"], measure_policy))
    if job.stage["checkpoint_every_s"]:
        found.append(timed_checkpoints(job.stage["checkpoint_every_s"]))
    return found or None


def _last_checkpoint(path: Path) -> str | None:
    found = sorted(path.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]) if p.name.split("-")[-1].isdigit() else -1)
    return str(found[-1]) if found else None


def _count(names) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def is_main_process() -> bool:
    """Rank 0 of an ``accelerate launch`` (or the only process): the one that writes and prints."""
    return os.environ.get("RANK", "0") == "0"


def train_grpo(job: GRPOJob) -> dict:
    """Train, measure before/after, save ``final``, ``metrics.jsonl`` and reward curves.

    Under ``accelerate launch`` with several processes every rank rolls out its share
    of each step (its own sandbox pool) and measures; rank 0 writes the outputs.

    Returns:
        The summary written to ``grpo_summary.json``.
    """
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from runtime.sandbox import SandboxLimits, SandboxPool
    from runtime.tracking import use_tracker_dir
    from runtime.train.adapters import AdapterError, lora_config, merge_adapter, parameter_counts
    from runtime.workflows import warmup_jobs

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(job.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not (Path(job.model_dir) / "config.json").is_file():
        raise GRPOSetupError(f"no model in {job.model_dir}; run the sft step first")
    spec, terms = reward_spec(job), schema_terms(job)
    llm_judge = reward_llm_judge(job)         # R_judge's llm judge, when the plan declares one
    args = grpo_config(job)
    try:
        peft = lora_config(job.peft) if job.peft else None
    except AdapterError as exc:
        raise GRPOSetupError(str(exc)) from None
    use_tracker_dir(job.trl.get("report_to", "none"), out)
    torch.manual_seed(job.seed)
    tokenizer = AutoTokenizer.from_pretrained(job.model_dir)
    tasks = load_training_tasks(job)
    room = completion_room(job, tokenizer, tasks)
    if "warning" in room and is_main_process():
        print(f"warning: {room['warning']}", file=sys.stderr)
    # float32 master weights (bf16 is autocast), on the GPU before the measurement (runtime.train.precision).
    model = load_for_training(job.model_dir, args)
    started = time.time()
    warmup = warmup_jobs(tasks)
    group = job.stage["group"]
    limits = SandboxLimits(secret_env=tuple(job.secret_env))
    # The references are the recipe's own code: they run as the gate ran them (its timeout and
    # process reuse, `gate execution`); the policy's rollouts get a fresh process per job.
    reference_limits = SandboxLimits(**job.reference_limits) if job.reference_limits else limits
    # A seeded sample of the measured instances: only their references need to run.
    measured_tasks = load_measure_tasks(job)
    measured_tasks = random.Random(job.seed).sample(measured_tasks, min(job.stage["measure"], len(measured_tasks)))
    with SandboxPool(job.workers, job.warehouse, reference_limits, job.api_factory, warmup=warmup) as references:
        rows, plays = build_rows(job, references, tasks)
        # Measured on dev when the step gives it (held out from SFT and from these rows);
        # a job without one measures a sample of its own rows, as an in-sample check.
        measure_rows, measure_plays = build_rows(job, references, measured_tasks) if measured_tasks else (rows, plays)
    measured_on = "dev" if measured_tasks else "training rows"
    with SandboxPool(job.workers, job.warehouse, limits, job.api_factory, warmup=warmup) as sandbox:
        # The measured rows: a seeded sample across workflows, the same before and after.
        picked = random.Random(job.seed).sample(measure_rows, min(job.stage["measure"], len(measure_rows)))
        probe = [measure_plays[r["row_key"]] for r in picked]
        scores: dict[str, list] = {when: [] for when in ("after", "after_sampled")}

        def measure_before():
            greedy_scores, sampled_scores = [], []
            return (measure(job, model, tokenizer, sandbox, probe, terms, llm_judge=llm_judge, scores=greedy_scores),
                    measure(job, model, tokenizer, sandbox, probe, terms, samples=group, llm_judge=llm_judge,
                            scores=sampled_scores),
                    greedy_scores, sampled_scores)

        # Saved once taken: a run resumed from its checkpoints reads it back instead of decoding it again.
        # `measure 0` plays none: no before, after or curve (E535 refuses `measure_every` with it).
        before = before_sampled = None
        scores["before"], scores["before_sampled"] = [], []
        if probe:
            before, before_sampled, scores["before"], scores["before_sampled"] = measured_before(
                out / BEFORE_FILE, before_key(job, probe), measure_before, save=is_main_process())
        sampled: dict[str, int] = {}
        # A flat group (every rollout passes, or every one fails) has zero advantage and gives no
        # gradient. Each step's flat groups are counted whether or not they are replaced:
        # `dynamic_sampling 0` runs no round, so it counts them and replaces none.
        dynamic = DynamicSampling(job.stage["dynamic_sampling"], group, sorted(plays), job.seed)
        trainer = GRPOTrainer(
            model=model, processing_class=tokenizer, args=args,
            reward_funcs=make_reward_funcs(spec, plays, terms, sampled, llm_judge), train_dataset=Dataset.from_list(rows),
            rollout_func=make_rollout_func(job, tokenizer, sandbox, plays, dynamic,
                                           outcome_of=lambda key, episode: score_episode(
                                               episode, plays[key], spec, terms)[OUTCOME]),
            peft_config=peft,
            callbacks=_callbacks(job, lambda policy: measure(job, policy, tokenizer, sandbox, probe, terms,
                                                             llm_judge=llm_judge)),
        )
        prepare_scoring(trainer, job)
        counts = parameter_counts(trainer.model)
        train_from(trainer, _last_checkpoint(out / "checkpoints"))
        after = after_sampled = None
        if probe:
            after = measure(job, trainer.model, tokenizer, sandbox, probe, terms, llm_judge=llm_judge,
                            scores=scores["after"])
            after_sampled = measure(job, trainer.model, tokenizer, sandbox, probe, terms, samples=group,
                                    llm_judge=llm_judge, scores=scores["after_sampled"])
    history = trainer.state.log_history
    # Every rank takes part in saving (sharded weights are gathered); rank 0 writes.
    tmp = out / ".final.tmp"
    trainer.save_model(str(tmp))
    summary = {
        "steps": trainer.state.global_step, "rows": len(rows), "measured_rows": len(probe),
        "history": job.stage["history"],
        # Training rows per workflow (every training instance; conversations are one row each
        # with policy history), and the rollouts this process scored per workflow.
        "rows_per_workflow": _count(r["workflow"] for r in rows),
        "turns_per_workflow": _count(p.workflow for p in plays.values() for _ in p.task.turns),
        "rollouts_per_workflow": dict(sorted(sampled.items())),
        "world_size": trainer.args.world_size,
        "reward_weights": dict(zip(spec.components, spec.trl_weights)), "aggregate": spec.aggregate,
        "before": before, "after": after, "sampled_per_row": group,
        "before_sampled": before_sampled, "after_sampled": after_sampled,
        # What before and after were measured on, and after minus before paired over the same
        # rows (clustered by instance): greedy, and over `group` samples per row.
        "measured_on": measured_on if probe else None, "rows_drawn": job.stage["rows"],
        # What the rollouts and the measured rows decoded with (`stage grpo { copy_bias }`): a
        # measurement with the bias is not comparable with one without it.
        "copy_bias": rollout_copy_bias(job),
        # The greedy measurement over the steps (before, every `measure_every` steps, after).
        "curve": measured_curve(before, trainer.state.log_history, after, trainer.state.global_step)
        if probe else [],
        "change": {"greedy": paired_change(scores["after"], scores["before"]),
                   "sampled": paired_change(scores["after_sampled"], scores["before_sampled"])} if probe else None,
        "wall_s": round(time.time() - started, 1), "completion_room": room,
        "sandbox_redacted": sandbox.redactions,    # secret values cut out of tool output (docs/sandbox.md)
        "outcome_judged_by": outcome_sources(plays),
        "adapter": "lora" if peft is not None else None, **counts,
    }
    # Groups flat in R_outcome per rollout call, and those dropped and replaced (none with 0 rounds).
    summary["dynamic_sampling"] = {"rounds": dynamic.rounds, "per_step": dynamic.per_step,
                                   **{name: sum(r[name] for r in dynamic.per_step)
                                      for name in ("groups", "dropped", "replaced", "flat_after")}}
    if llm_judge is not None:     # R_judge's llm judge: how often it was asked, and how many it answered anew
        summary["llm_judge"] = {"every": llm_judge.every, "asked_anew": llm_judge.asked}
    if trainer.is_world_process_zero():
        # Written atomically: a launch by hand writes straight into the run dir, outside
        # the runner's staged step dir, and the next `craftc run` adopts what it finds.
        write_atomic(out / "metrics.jsonl", "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in history))
        tokenizer.save_pretrained(str(tmp))
        # A LoRA stage saved its adapter: keep it, and merge it into `final` (runtime.train.adapters).
        saved = replace_dir(tmp, out / (ADAPTER if peft is not None else FINAL))
        if peft is not None:
            merge_adapter(job.model_dir, saved, out / FINAL, tokenizer)
        summary["plots"] = plot_curves(history, spec.components, out) + plot_measured(
            summary["curve"], measured_on, out)
        write_atomic(out / GRPO_SUMMARY.path, json_text(summary))
    return summary
