"""Stage II: execution-shaped GRPO with the composite reward and multi-turn rollouts.

Why a ``rollout_func`` and not TRL's ``tools=``: TRL's tool loop parses tool calls
as ``<tool_call>{json}</tool_call>`` through ``tokenizer.response_template`` and
calls a Python function with JSON arguments. The craft agent's tool call is the
``<CODE>`` block of a three-block turn, run in the sandbox with the instance's
params; the plan and the code must be scored together. So the rollout is the
agent loop itself (``runtime.agent.run_episodes``), sampling with the trainer's
model: the ``<CODE>`` of a completion runs in the sandbox, its output comes back as
a ``tool`` message, and the model continues, up to ``max_turns`` model calls. The
tool tokens are spliced into the completion with ``env_mask = 0`` so they are never
trained, exactly as TRL does for its own tool loop.

One reward function per component (``__name__`` = the component) receives the
completions, the dataset columns and the rollout's agent turns; ``reward_weights``
come from the plan's reward spec (normalised when the recipe says ``normalized``),
so TRL's logged ``reward`` is ``R_total`` as optimised and ``rewards/<c>/mean`` is
each component.

Everything it runs from comes from the plan dir: the stage's ``trl_config.json`` is
passed to ``GRPOConfig`` unchanged; the reward spec, the system prompt and turn
wording (``specs/input_builder.json``), the masking spec (tool turns are never
trained) and the sandbox's worker count are read there too. The ``grpo`` step writes
a step config (model, instances, warehouse and output dirs, relative to itself) and
runs the plan's ``stages/<stage>/launch.sh`` with it, like SFT:
``python -m runtime.train.grpo --plan-dir PLAN --stage grpo --config STEP_CONFIG.json``
under ``accelerate launch``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from craftc.atomic import replace_dir, write_atomic
from runtime.layout import (ADAPTER, API_FACTORY, FINAL, GRPO_FINAL, GRPO_STEP_CONFIG, GRPO_SUMMARY,
                            MANIFEST, SFT_FINAL, TRAIN_INSTANCES, WAREHOUSE)
from runtime.train.train_split import write_train_instances

__all__ = ["GRPOSetupError", "GRPOJob", "build_rows", "make_reward_funcs", "make_rollout_func",
           "grpo_config", "train_grpo", "measure", "run_grpo", "adopt_grpo_step", "main"]


class GRPOSetupError(ValueError):
    """A GRPO job that cannot start; the message names the thing and the fix."""


@dataclass
class GRPOJob:
    """Everything one GRPO run needs, as plain data: the plan's parts and the step's paths."""

    model_dir: str
    instances: str                  # JSON file of training instances (the dataset step's format)
    warehouse: str
    out_dir: str
    system_prompt: str
    reward: dict                    # RewardSpec fields: weights, aggregate, penalties, step_rewards
    stage: dict                     # the plan's Stage (max_turns, group, max_new_tokens, temperature, ...)
    trl: dict                       # stages/<stage>/trl_config.json, for GRPOConfig as it is
    wording: dict                   # {"user": ..., "tool": ...}
    fmt: dict                       # block tag names
    workers: int                    # sandbox workers (gate execution { workers })
    secret_env: list                # extra host variables redacted from tool output (gate execution)
    seed: int
    peft: dict | None = None                      # stages/<stage>/peft_config.json (LoraConfig), if any
    schema: dict | None = None                    # craftc.ir.Schema as JSON, for consistency/judge
    api_factory: str = API_FACTORY

    STEP_KEYS = ("model_dir", "instances", "warehouse", "out_dir")

    @classmethod
    def from_plan(cls, plan_dir: str | Path, stage_name: str, config: str | Path) -> "GRPOJob":
        """The job of plan stage ``stage_name`` with the step config's paths (relative to the config)."""
        from runtime.agent import TurnWording
        from runtime.plan import PlanError, load_plan

        plan_dir, config = Path(plan_dir), Path(config)
        try:
            plan = load_plan(plan_dir)
            recipe = plan.recipe
            step = json.loads(config.read_text(encoding="utf-8"))
            builder = json.loads((plan_dir / "specs" / "input_builder.json").read_text(encoding="utf-8"))
            masking = json.loads((plan_dir / "specs" / "masking.json").read_text(encoding="utf-8"))
            trl = json.loads((plan_dir / "stages" / stage_name / "trl_config.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, PlanError) as exc:
            raise GRPOSetupError(f"cannot read the GRPO job from plan `{plan_dir}` and config `{config}`: "
                                 f"{exc}") from None
        stage = next((s for s in recipe.stages if s.name == stage_name and s.kind == "grpo"), None)
        problems = [f"step config {config}: missing keys {[k for k in cls.STEP_KEYS if k not in step]}"
                    ] if any(k not in step for k in cls.STEP_KEYS) else []
        if stage is None:
            problems.append(f"plan `{plan_dir}` has no grpo stage named `{stage_name}`")
        elif masking["stages"][stage_name]["roles"]["tool"] != "masked":
            problems.append(f"stage `{stage_name}`: specs/masking.json trains tool turns; GRPO never trains tool "
                            "output (add `tool_outputs` to the stage's `mask`)")
        if problems:
            raise GRPOSetupError("; ".join(problems))
        from runtime.rewards import RewardSpec
        from runtime.tracking import run_name
        from runtime.train.adapters import AdapterError, read_peft_config

        try:
            peft = read_peft_config(plan_dir, stage_name)
        except AdapterError as exc:
            raise GRPOSetupError(str(exc)) from None
        spec = RewardSpec.from_json(plan_dir / "specs" / "reward.json")
        wording = TurnWording.from_file(plan_dir / builder["turn_template"])
        mode = builder["stages"][stage_name]
        root = config.resolve().parent
        return cls(
            **{key: str(root / step[key]) for key in cls.STEP_KEYS},
            system_prompt=(plan_dir / builder["modes"][mode]["system_prompt"]).read_text(encoding="utf-8"),
            reward={"weights": spec.weights, "aggregate": spec.aggregate, "penalties": spec.penalties,
                    "step_rewards": spec.step_rewards},
            stage=stage.model_dump(mode="json"),
            # The tracker's run name from the plan hash; a `trl { run_name }` wins.
            trl={"run_name": run_name(recipe.name, stage_name, plan.content_hash), **trl}, wording={"user": wording.user, "tool": wording.tool},
            fmt=builder["format"], workers=recipe.gates.execution.workers,
            secret_env=list(recipe.gates.execution.secret_env), seed=recipe.seed, peft=peft,
            schema=recipe.schema_.model_dump(mode="json"),
        )


# ---------------------------------------------------------------- data


def _spec(job: GRPOJob):
    from runtime.rewards import RewardSpec
    return RewardSpec(**job.reward)


def _terms(job: GRPOJob):
    from craftc.ir import Schema
    from runtime.rewards import SchemaTerms
    return SchemaTerms.from_schema(Schema.model_validate(job.schema)) if job.schema else None


def load_training_tasks(job: GRPOJob) -> list:
    """The job's training instances as agent tasks; a missing, malformed or empty file is a setup error."""
    from runtime.agent import TaskFormatError, load_tasks

    try:
        tasks = load_tasks(job.instances)
    except TaskFormatError as exc:
        raise GRPOSetupError(str(exc)) from None
    if not tasks:
        raise GRPOSetupError(f"{job.instances} holds no training instances; check the dataset step's train split")
    return tasks


@dataclass
class RolloutTask:
    """What one training row rolls out: the prompt, the turns to play and how each is scored."""

    key: str                        # "<instance id>" (policy history) or "<instance id>/<turn>"
    workflow: str
    prompt: list[dict]              # system prompt (+ reference history) + the first user turn to play
    task: object                    # runtime.agent.AgentTask with the turns to play, in order
    references: list                # per played turn: the reference result (DataFrame) or None
    expectations: list              # per played turn: its expectations


def prompt_key(prompt: list[dict]) -> str:
    """A row's identity as TRL hands it back to the rollout function: its prompt messages."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def build_rows(job: GRPOJob, sandbox, tasks: list) -> tuple[list[dict], dict[str, RolloutTask]]:
    """Every training instance as rollout rows, and what each row plays.

    With ``history policy`` (the default) a row is a whole instance: its first user turn
    is the prompt and the rollout plays every later turn on the policy's own earlier
    turns and their real tool outputs. With ``history reference`` a row is one instance
    turn whose prompt carries the earlier turns as the reference turns and their tool
    outputs. Nothing is capped: GRPO samples rows per step in a seeded order.

    Returns:
        ``(rows, plays)``: dataset rows (``prompt``, ``workflow``, ``row_key``) and the
        ``RolloutTask`` of each row key.
    """
    from runtime.agent import AgentTask, ExecRecord, TurnWording, tool_output_text
    from runtime.distill.blocks import format_turn

    from craftc.ir import BlockFormat

    wording = TurnWording(**job.wording)
    fmt = BlockFormat(**job.fmt)
    jobs = [(turn.reference_code, task.params) for task in tasks for turn in task.turns]
    results = iter(sandbox.run_many(jobs) if hasattr(sandbox, "run_many") else [sandbox.run(*j) for j in jobs])
    rows, plays = [], {}
    for task in tasks:
        refs = [next(results) for _ in task.turns]
        # A hidden reference shapes a prompt's history (history reference), never the reward.
        frames = [r.result_frame if r.ok and turn.reference_visible else None for r, turn in zip(refs, task.turns)]
        expectations = [list(turn.expectations) for turn in task.turns]
        messages = [{"role": "system", "content": job.system_prompt}]
        if job.stage["history"] == "policy":
            prompt = messages + [{"role": "user", "content": wording.render_user(task.turns[0].ask)}]
            plays[task.id] = RolloutTask(task.id, task.workflow, prompt, task, frames, expectations)
            continue
        for t, turn in enumerate(task.turns):
            prompt = messages + [{"role": "user", "content": wording.render_user(turn.ask)}]
            one = AgentTask(id=f"{task.id}/{t}", workflow=task.workflow, params=task.params, turns=(turn,))
            plays[one.id] = RolloutTask(one.id, task.workflow, prompt, one, [frames[t]], [expectations[t]])
            reference_turn = format_turn("Follow the plan.", turn.reference_plan, turn.reference_code, fmt)
            messages = prompt + [{"role": "assistant", "content": reference_turn},
                                 {"role": "tool", "content": wording.render_tool(
                                     tool_output_text(ExecRecord.from_result(refs[t])))}]
    for key, play in plays.items():
        rows.append({"prompt": play.prompt, "workflow": play.workflow, "row_key": key})
    return rows, plays


def outcome_sources(plays: dict[str, RolloutTask]) -> dict[str, int]:
    """How many played turns' R_outcome compares with a reference result, and how many is
    the share of checks passed (references hidden, or turns with checks only)."""
    from craftc.ir import REFERENCE_KINDS

    turns = [(expectations, frame) for p in plays.values() for expectations, frame in zip(p.expectations, p.references)]
    by_reference = sum(frame is not None and any(e["kind"] in REFERENCE_KINDS for e in expectations)
                       for expectations, frame in turns)
    return {"reference": by_reference, "checks": len(turns) - by_reference}


def completion_room(job: GRPOJob, tokenizer, tasks) -> dict:
    """How the reference turns fit in ``max_new_tokens``, with a warning when most do not.

    A completion cut off mid-``<CODE>`` never runs, so its outcome reward is 0: with
    a limit below most reference turns GRPO has little to learn from. (The smoke
    profile does this on purpose, to stay fast; a real profile should not.)
    """
    from craftc.ir import BlockFormat
    from runtime.distill.blocks import format_turn

    fmt = BlockFormat(**job.fmt)
    limit = job.stage["max_new_tokens"]
    lengths = sorted(len(tokenizer(format_turn("Follow the plan.", turn.reference_plan, turn.reference_code, fmt),
                                   add_special_tokens=False)["input_ids"])
                     for task in tasks for turn in task.turns)
    room = {"max_new_tokens": limit, "median_reference_tokens": lengths[len(lengths) // 2] if lengths else 0,
            "longest_reference_tokens": lengths[-1] if lengths else 0,
            "share_cut_off": round(sum(n > limit for n in lengths) / len(lengths), 4) if lengths else 0.0}
    if room["median_reference_tokens"] > limit:
        room["warning"] = (f"max_new_tokens {limit} is shorter than most reference turns (median "
                           f"{room['median_reference_tokens']} tokens): completions are cut off before their CODE "
                           f"block ends; raise `max_new_tokens` in the grpo stage to {room['longest_reference_tokens']}")
    return room


# ---------------------------------------------------------------- rollouts and rewards


def completion_tokens(tokenizer, transcript: list[dict], n_prompt: int, generations: list) -> dict:
    """The completion of a multi-turn rollout as TRL trains it: the policy's turns trained, the rest masked.

    The whole ``transcript`` (prompt messages first; each later assistant message is one
    generation) is rendered with the chat template, exactly as each later generation saw
    its history: the tool messages and later user turns between two generations get
    ``env_mask`` 0, and each assistant turn the template's generation span. A turn cut
    off at ``max_new_tokens`` never wrote the end-of-turn token the template closes it
    with, so that token is masked too. Log-probs are the sampled ones where the rendered
    turn is the sampled ids (a byte-level tokenizer can re-tokenize decoded text
    differently), else 0.
    """
    prompt_ids = generations[0].prompt_ids
    last = max(i for i, m in enumerate(transcript) if m["role"] == "assistant")
    rendered = tokenizer.apply_chat_template(transcript[: last + 1], return_dict=True,
                                             return_assistant_tokens_mask=True)
    ids, trained = list(rendered["input_ids"]), list(rendered["assistant_masks"])
    if ids[: len(prompt_ids)] != prompt_ids:
        raise GRPOSetupError("the chat template is not prefix-preserving; multi-turn rollouts need one")
    end = max(i for i, flag in enumerate(trained) if flag) + 1
    ids, trained = ids[len(prompt_ids):end], trained[len(prompt_ids):end]
    runs, start = [], None                      # [start, stop) of each assistant turn's trained span
    for i, flag in enumerate(trained + [0]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            runs.append((start, i))
            start = None
    if len(runs) != len(generations):
        raise GRPOSetupError(f"the chat template marks {len(runs)} assistant spans for {len(generations)} "
                             "generations; it needs {% generation %} around each assistant turn")
    mask, logps = [int(flag) for flag in trained], [0.0] * len(ids)
    eos_id = tokenizer.eos_token_id
    for (first, stop), gen in zip(runs, generations):
        sampled = gen.completion_ids
        if not sampled or sampled[-1] != eos_id:     # cut off: the closing token is the template's
            mask[stop - 1] = 0
            stop -= 1
        if ids[first:stop] == sampled[: stop - first] and stop - first == len(sampled):
            logps[first:stop] = list(gen.logprobs)
    return {"completion_ids": ids, "logprobs": logps, "env_mask": mask}


def play(job: GRPOJob, generate, sandbox, plays: list[RolloutTask], prompts: list[list[dict]],
         overlap: bool = False) -> tuple:
    """Run each rollout task's turns with ``generate``: episodes, transcripts and generations.

    ``overlap`` generates for half the tasks while the other half's code runs in the
    sandbox (training rollouts; ``benchmarks/rollout.py`` measures the difference).
    """
    from craftc.ir import BlockFormat
    from runtime.agent import TurnWording, run_episodes

    generations: dict[int, list] = {i: [] for i in range(len(plays))}
    transcripts: list[list[dict]] = []
    episodes = run_episodes(generate, [p.task for p in plays], "", sandbox, BlockFormat(**job.fmt),
                            job.stage["max_turns"], TurnWording(**job.wording),
                            on_generation=lambda i, _t, gen: generations[i].append(gen), prefixes=prompts,
                            transcripts=transcripts, overlap=overlap)
    return episodes, transcripts, [generations[i] for i in range(len(plays))]


def make_rollout_func(job: GRPOJob, tokenizer, sandbox, plays: dict[str, RolloutTask]):
    """TRL ``rollout_func``: each prompt's turns played by the policy, tool and user tokens masked out."""
    from runtime.agent import HFGenerator, TrainerVLLMGenerator

    by_prompt: dict[str, str] = {}
    for key, task in plays.items():
        by_prompt.setdefault(prompt_key(task.prompt), key)

    def rollout(prompts, trainer):
        # The engine the plan chose (`rollout transformers | vllm`); the loop is the same.
        if getattr(trainer, "use_vllm", False):
            generate = TrainerVLLMGenerator(trainer, tokenizer)
        else:
            generate = HFGenerator(trainer.accelerator.unwrap_model(trainer.model), tokenizer,
                                   max_new_tokens=job.stage["max_new_tokens"], do_sample=True,
                                   temperature=job.stage["temperature"], batch_size=len(prompts))
        keys = [by_prompt[prompt_key(p)] for p in prompts]
        episodes, transcripts, generations = play(job, generate, sandbox, [plays[k] for k in keys], prompts,
                                                  overlap=True)
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "episode": [],
               "row_key": keys}
        for prompt, episode, transcript, gens in zip(prompts, episodes, transcripts, generations):
            tokens = completion_tokens(tokenizer, transcript, len(prompt), gens)
            out["prompt_ids"].append(gens[0].prompt_ids)
            for name, values in tokens.items():
                out[name].append(values)
            out["episode"].append(episode)
        return out

    return rollout


def score_episode(episode, play_task: RolloutTask, spec, terms=None) -> dict[str, float]:
    """Each component (and ``total``) of one rollout: the mean over its played turns.

    TRL's GRPO takes one scalar per completion, so a conversation's per-turn scores are
    averaged (within a turn, ``step_rewards`` still scores each tool call).
    """
    from runtime.rewards import TurnContext, score_turn

    sums: dict[str, float] = {}
    for turn, reference, expectations in zip(episode.turns, play_task.references, play_task.expectations):
        ctx = TurnContext(params=dict(play_task.task.params), reference=reference,
                          expectations=tuple(expectations), terms=terms)
        scores = score_turn(turn, ctx, spec)
        scores["exec_success"] = float(turn.final_ok)
        for name, value in scores.items():
            sums[name] = sums.get(name, 0.0) + value
    return {name: value / max(1, len(episode.turns)) for name, value in sums.items()}


def make_reward_funcs(spec, plays: dict[str, RolloutTask], terms=None, sampled: dict | None = None) -> list:
    """One TRL reward function per weighted component, each named after it.

    Each receives the rollout's ``episode`` and ``row_key`` and returns that component's
    score per completion. ``sampled`` (if given) counts the rollouts per workflow.
    """
    cache: dict[int, dict] = {}

    def scores_of(episode, key) -> dict:
        # The four functions score the same rollout: compute it once.
        if id(episode) not in cache:
            cache[id(episode)] = score_episode(episode, plays[key], spec, terms)
        return cache[id(episode)]

    def make(component: str):
        def reward(prompts, completions, episode, row_key, **kwargs):
            values = [scores_of(e, k)[component] for e, k in zip(episode, row_key)]
            if component == spec.components[0]:
                if sampled is not None:
                    for k in row_key:
                        sampled[plays[k].workflow] = sampled.get(plays[k].workflow, 0) + 1
                if "log_metric" in kwargs:
                    ok = [scores_of(e, k)["exec_success"] for e, k in zip(episode, row_key)]
                    calls = [sum(len(t.calls) for t in e.turns) for e in episode]
                    kwargs["log_metric"]("exec_success", sum(ok) / max(1, len(ok)))
                    kwargs["log_metric"]("model_calls", sum(calls) / max(1, len(calls)))
            if component == spec.components[-1]:
                cache.clear()
            return values
        reward.__name__ = component
        return reward

    return [make(c) for c in spec.components]


# ---------------------------------------------------------------- config and training


def grpo_config(job: GRPOJob):
    """``GRPOConfig(**trl_config)``: the plan's TRL settings as compiled, plus the output dir."""
    from trl import GRPOConfig

    try:
        return GRPOConfig(output_dir=str(Path(job.out_dir) / "checkpoints"), **job.trl)
    except TypeError as exc:
        raise GRPOSetupError(f"the plan's trl_config.json does not fit this TRL version: {exc}; "
                             "recompile the recipe with the craft installed here") from None


def _last_checkpoint(path: Path) -> str | None:
    found = sorted(path.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]) if p.name.split("-")[-1].isdigit() else -1)
    return str(found[-1]) if found else None


def measure(job: GRPOJob, model, tokenizer, sandbox, probe: list[RolloutTask], terms=None,
            samples: int = 0) -> dict:
    """Mean R_total, each component and execution success over the ``probe`` rollout tasks.

    ``samples=0`` decodes greedily (what an evaluation sees). ``samples=k`` draws k
    completions per task at the stage's temperature, seeded, which is the policy GRPO
    actually optimises: its expected reward is what a step should raise.
    """
    import torch

    from runtime.agent import HFGenerator

    spec = _spec(job)
    generate = HFGenerator(model, tokenizer, max_new_tokens=job.stage["max_new_tokens"], batch_size=8,
                           do_sample=samples > 0, temperature=job.stage["temperature"])
    tasks = [task for task in probe for _ in range(max(samples, 1))]
    torch.manual_seed(job.seed)
    episodes, _, _ = play(job, generate, sandbox, tasks, [t.prompt for t in tasks])
    sums: dict[str, float] = {}
    for task, episode in zip(tasks, episodes):
        for k, v in score_episode(episode, task, spec, terms).items():
            sums[k] = sums.get(k, 0.0) + v
    return {k: round(v / max(1, len(tasks)), 6) for k, v in sorted(sums.items())}


def _count(names) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def _json_text(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def _plot_curves(log_history: list[dict], components: tuple[str, ...], out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for name, key in [("total", "reward")] + [(c, f"rewards/{c}/mean") for c in components]:
        points = [(h["step"], h[key]) for h in log_history if key in h]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(*zip(*points), marker="o", markersize=2)
        ax.set(xlabel="step", ylabel=key, title=f"GRPO reward: {name}")
        fig.tight_layout()
        fig.savefig(out / f"reward_{name}.png", dpi=80, metadata={"Software": None})
        plt.close(fig)
        written.append(f"reward_{name}.png")
    return written


def _is_main_process() -> bool:
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
    from transformers import AutoModelForCausalLM, AutoTokenizer
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
    spec, terms = _spec(job), _terms(job)
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
    if "warning" in room and _is_main_process():
        print(f"warning: {room['warning']}", file=sys.stderr)
    model = AutoModelForCausalLM.from_pretrained(job.model_dir, dtype=torch.bfloat16 if args.bf16 else torch.float32)
    started = time.time()
    warmup = warmup_jobs(tasks)
    group = job.stage["group"]
    limits = SandboxLimits(secret_env=tuple(job.secret_env))
    with SandboxPool(job.workers, job.warehouse, limits, job.api_factory, warmup=warmup) as sandbox:
        rows, plays = build_rows(job, sandbox, tasks)
        # The measured rows: a seeded sample across workflows, the same before and after.
        probe = [plays[r["row_key"]] for r in random.Random(job.seed).sample(rows, min(job.stage["measure"], len(rows)))]
        before = measure(job, model, tokenizer, sandbox, probe, terms)
        before_sampled = measure(job, model, tokenizer, sandbox, probe, terms, samples=group)
        sampled: dict[str, int] = {}
        trainer = GRPOTrainer(
            model=model, processing_class=tokenizer, args=args,
            reward_funcs=make_reward_funcs(spec, plays, terms, sampled), train_dataset=Dataset.from_list(rows),
            rollout_func=make_rollout_func(job, tokenizer, sandbox, plays), peft_config=peft,
        )
        counts = parameter_counts(trainer.model)
        trainer.train(resume_from_checkpoint=_last_checkpoint(out / "checkpoints"))
        after = measure(job, trainer.model, tokenizer, sandbox, probe, terms)
        after_sampled = measure(job, trainer.model, tokenizer, sandbox, probe, terms, samples=group)
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
        "wall_s": round(time.time() - started, 1), "completion_room": room,
        "sandbox_redacted": sandbox.redactions,    # secret values cut out of tool output (docs/sandbox.md)
        "outcome_judged_by": outcome_sources(plays),
        "adapter": "lora" if peft is not None else None, **counts,
    }
    if trainer.is_world_process_zero():
        # Written atomically: a launch by hand writes straight into the run dir, outside
        # the runner's staged step dir, and the next `craftc run` adopts what it finds.
        write_atomic(out / "metrics.jsonl", "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in history))
        tokenizer.save_pretrained(str(tmp))
        # A LoRA stage saved its adapter: keep it, and merge it into `final` (runtime.train.adapters).
        saved = replace_dir(tmp, out / (ADAPTER if peft is not None else FINAL))
        if peft is not None:
            merge_adapter(job.model_dir, saved, out / FINAL, tokenizer)
        summary["plots"] = _plot_curves(history, spec.components, out)
        write_atomic(out / GRPO_SUMMARY.path, _json_text(summary))
    return summary


# ---------------------------------------------------------------- step and CLI


def run_grpo(ctx):
    """The ``grpo`` step: GRPO from the SFT checkpoint into ``RUN_DIR/grpo``, through ``launch.sh``."""
    from runtime.step_context import StepError, StepResult
    from runtime.train.launch import PreflightError, launch_stage, preflight
    from runtime.train.stages import grpo_stage

    stage = grpo_stage(ctx.plan.recipe)
    if stage.engine == "verl":
        from runtime.train.verl.step import run_verl_step
        return run_verl_step(ctx)
    if ctx.launch:     # a launch by hand runs where the engine and GPUs are: check here only when training here
        try:
            preflight({"parallel": stage.parallel, "gpus": stage.gpus, "rollout": stage.rollout})
        except PreflightError as exc:
            raise StepError(f"stage `{stage.name}` cannot train on this machine: {exc}; or prepare it with "
                            "`craftc run --no-launch` and run its launch.sh where it can") from None
    # The plan files the trainer reads (GRPOJob.from_plan), named in this step's manifest.
    builder = json.loads(ctx.artifact("specs/input_builder.json").read_text(encoding="utf-8"))
    for rel in (builder["turn_template"], builder["modes"][builder["stages"][stage.name]]["system_prompt"],
                "specs/reward.json", "specs/masking.json", f"stages/{stage.name}/trl_config.json",
                *([f"stages/{stage.name}/peft_config.json"] if stage.lora is not None else [])):
        ctx.artifact(rel)
    write_train_instances(ctx)
    ctx.input_dir(SFT_FINAL.step)       # GRPO starts from the sft step's model: that step must have run
    # Paths relative to this config's directory: the run dir can move to another machine.
    (ctx.out_dir / GRPO_STEP_CONFIG.path).write_text(_json_text({
        "model_dir": SFT_FINAL.relative_to_step("grpo"), "instances": TRAIN_INSTANCES.relative_to_step("grpo"),
        "warehouse": WAREHOUSE.relative_to_step("grpo"), "out_dir": "."}))
    command = launch_stage(ctx, "grpo", stage.name, ctx.out_dir / GRPO_STEP_CONFIG.path)
    if not ctx.launch:
        return StepResult(metrics={"launch": "manual", "commands": {"grpo": command}})
    return StepResult(metrics={"launch": "step", "commands": {"grpo": command}, **_summary_metrics(ctx.out_dir)},
                      outputs=(GRPO_FINAL.path, "metrics.jsonl", GRPO_SUMMARY.path))


def _summary_metrics(step_dir: Path) -> dict:
    from runtime.step_context import StepError

    path = step_dir / GRPO_SUMMARY.path
    if not (path.is_file() and (step_dir / GRPO_FINAL.path).is_dir()):
        raise StepError(f"GRPO left no {path.name} and final/ in {step_dir}; run the stage's launch.sh with "
                        f"{step_dir / GRPO_STEP_CONFIG.path} first, or rerun the grpo step")
    summary = json.loads(path.read_text())
    return {"steps": summary["steps"], "wall_s": summary["wall_s"], "world_size": summary["world_size"],
            **{f"before_{k}": v for k, v in summary["before"].items() if k in ("total", "exec_success")},
            **{f"after_{k}": v for k, v in summary["after"].items() if k in ("total", "exec_success")},
            **{f"{when}_sampled_{k}": summary[f"{when}_sampled"][k] for when in ("before", "after")
               for k in ("total", "exec_success")}}


def adopt_grpo_step(ctx, step_dir: Path) -> dict:
    """The metrics of a grpo step prepared with `--no-launch` and trained by hand."""
    manifest = json.loads((step_dir / MANIFEST).read_text(encoding="utf-8"))
    return {**manifest["metrics"], **_summary_metrics(step_dir)}


def main(argv: list[str] | None = None) -> int:
    """``python -m runtime.train.grpo --plan-dir PLAN --stage NAME --config STEP_CONFIG.json``."""
    parser = argparse.ArgumentParser(prog="python -m runtime.train.grpo", description=__doc__.split("\n")[0])
    parser.add_argument("--plan-dir", required=True, help="the compiled plan dir")
    parser.add_argument("--stage", required=True, help="the grpo stage's name in the plan")
    parser.add_argument("--config", required=True, help="step config JSON: model_dir, instances, warehouse, out_dir")
    args = parser.parse_args(argv)
    try:
        summary = train_grpo(GRPOJob.from_plan(args.plan_dir, args.stage, args.config))
    except GRPOSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if _is_main_process():
        print(json.dumps({k: summary[k] for k in ("steps", "before", "after", "before_sampled", "after_sampled")},
                         sort_keys=True))
    _end_distributed()
    return 0


def _end_distributed() -> None:
    """Leave the process group cleanly (see runtime.train.sft): every rank waits, then tears down."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
