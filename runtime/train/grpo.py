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
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

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
    api_factory: str = "runtime.world.api:WarehouseApi"
    max_rows: int = 64                            # training rows kept (instances x turns)
    measure_rows: int = 32                        # training rows measured before and after

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


def build_rows(job: GRPOJob, sandbox, tasks: list) -> tuple[list[dict], dict]:
    """Training rows (one per instance turn) and the reference result of each.

    A follow-up turn's prompt carries the earlier turns as the reference assistant
    turns and their real tool outputs, so every row is one user turn to solve.

    Returns:
        ``(rows, references)``: rows with ``prompt`` (messages), ``ask``, ``reference_key``,
        ``params_json`` and ``expectations_json``; references maps key -> DataFrame.
    """
    from runtime.agent import ExecRecord, TurnWording, tool_output_text
    from runtime.distill.blocks import format_turn

    from craftc.ir import BlockFormat

    wording = TurnWording(**job.wording)
    fmt = BlockFormat(**job.fmt)
    rows, references = [], {}
    for task in tasks:
        messages = [{"role": "system", "content": job.system_prompt}]
        for t, turn in enumerate(task.turns):
            messages.append({"role": "user", "content": wording.render_user(turn.ask)})
            result = sandbox.run(turn.reference_code, task.params)
            key = f"{task.id}/{t}"
            references[key] = result.result_frame if result.ok else None
            rows.append({"prompt": [dict(m) for m in messages], "ask": turn.ask, "reference_key": key,
                         "params_json": json.dumps(task.params, sort_keys=True, default=str),
                         "expectations_json": json.dumps(list(turn.expectations), sort_keys=True)})
            reference_turn = format_turn("Follow the plan.", turn.reference_plan, turn.reference_code, fmt)
            messages += [{"role": "assistant", "content": reference_turn},
                         {"role": "tool", "content": wording.render_tool(tool_output_text(ExecRecord.from_result(result)))}]
    return rows[: job.max_rows], references


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


def _suffix_ids(tokenizer, before: list[dict], after: list[dict]) -> list[int]:
    """Tokens the template adds between a finished assistant turn and the next generation.

    Rendered as text and cut after the last end-of-turn token of ``before``, as TRL's
    own tool loop does, so the ids continue the generated sequence exactly.
    """
    eos = tokenizer.eos_token
    prev = tokenizer.apply_chat_template(before, tokenize=False)
    full = tokenizer.apply_chat_template(after, tokenize=False, add_generation_prompt=True)
    cut = prev.rfind(eos) + len(eos)
    if not full.startswith(prev[:cut]):
        raise GRPOSetupError("the chat template is not prefix-preserving; multi-turn rollouts need one")
    return tokenizer(full[cut:], add_special_tokens=False)["input_ids"]


def make_rollout_func(job: GRPOJob, tokenizer, sandbox, references: dict):
    """TRL ``rollout_func``: one agent user turn per prompt, tool tokens masked out."""
    from craftc.ir import BlockFormat
    from runtime.agent import AgentTask, HFGenerator, TaskTurn, TurnWording, run_episodes

    wording = TurnWording(**job.wording)
    fmt = BlockFormat(**job.fmt)
    max_turns = job.stage["max_turns"]

    def rollout(prompts, trainer):
        model = trainer.accelerator.unwrap_model(trainer.model)
        generate = HFGenerator(model, tokenizer, max_new_tokens=job.stage["max_new_tokens"],
                               do_sample=True, temperature=job.stage["temperature"], batch_size=len(prompts))
        tasks = [AgentTask(id=str(i), workflow="", turns=(TaskTurn(ask=p[-1]["content"]),)) for i, p in enumerate(prompts)]
        by_task: dict[int, list] = {i: [] for i in range(len(prompts))}
        episodes = run_episodes(generate, tasks, "", sandbox, fmt, max_turns, wording,
                                on_generation=lambda i, _t, gen: by_task[i].append(gen), prefixes=prompts)
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "agent_turn": []}
        for i, episode in enumerate(episodes):
            turn, gens = episode.turns[0], by_task[i]
            ids, logps, mask = [], [], []
            history = [dict(m) for m in prompts[i]]
            for n, gen in enumerate(gens):
                ids += gen.completion_ids
                logps += gen.logprobs
                mask += [1] * len(gen.completion_ids)
                history.append({"role": "assistant", "content": gen.text})
                if n + 1 < len(gens):              # a tool message came back and the model continued
                    history.append({"role": "tool", "content": turn.calls[n].tool_message})
                    suffix = _suffix_ids(tokenizer, history[:-1], history)
                    ids += suffix
                    logps += [0.0] * len(suffix)
                    mask += [0] * len(suffix)
            out["prompt_ids"].append(gens[0].prompt_ids)
            out["completion_ids"].append(ids)
            out["logprobs"].append(logps)
            out["env_mask"].append(mask)
            out["agent_turn"].append(turn)
        return out

    return rollout


def _context(row_params: str, row_expectations: str, reference, terms):
    from runtime.rewards import TurnContext
    return TurnContext(params=json.loads(row_params), reference=reference,
                       expectations=tuple(json.loads(row_expectations)), terms=terms)


def make_reward_funcs(spec, references: dict, terms=None) -> list:
    """One TRL reward function per weighted component, each named after it.

    Each receives ``completions`` and the dataset columns (``params_json``,
    ``reference_key``, ``expectations_json``) plus the rollout's ``agent_turn`` and
    returns that component's score per completion.
    """
    from runtime.rewards import score_turn

    cache: dict[int, dict] = {}

    def scores_of(turn, params_json, reference_key, expectations_json) -> dict:
        # The four functions score the same turn: compute it once per rollout.
        if id(turn) not in cache:
            ctx = _context(params_json, expectations_json, references.get(reference_key), terms)
            cache[id(turn)] = score_turn(turn, ctx, spec)
        return cache[id(turn)]

    def make(component: str):
        def reward(prompts, completions, agent_turn, params_json, reference_key, expectations_json, **kwargs):
            values = [scores_of(*args)[component]
                      for args in zip(agent_turn, params_json, reference_key, expectations_json)]
            if component == spec.components[0] and "log_metric" in kwargs:
                ok = [float(t.final_ok) for t in agent_turn]
                kwargs["log_metric"]("exec_success", sum(ok) / max(1, len(ok)))
                kwargs["log_metric"]("model_calls", sum(len(t.calls) for t in agent_turn) / max(1, len(ok)))
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


def measure(job: GRPOJob, model, tokenizer, sandbox, rows: list[dict], references: dict, terms=None,
            samples: int = 0) -> dict:
    """Mean R_total, each component and execution success on ``rows``.

    ``samples=0`` decodes greedily (what an evaluation sees). ``samples=k`` draws k
    completions per row at the stage's temperature, seeded, which is the policy GRPO
    actually optimises: its expected reward is what a step should raise.
    """
    import torch

    from craftc.ir import BlockFormat
    from runtime.agent import AgentTask, HFGenerator, TaskTurn, TurnWording, run_episodes
    from runtime.rewards import score_turn

    spec = _spec(job)
    wording = TurnWording(**job.wording)
    generate = HFGenerator(model, tokenizer, max_new_tokens=job.stage["max_new_tokens"], batch_size=8,
                           do_sample=samples > 0, temperature=job.stage["temperature"])
    rows = [row for row in rows for _ in range(max(samples, 1))]
    tasks = [AgentTask(id=r["reference_key"], workflow="", turns=(TaskTurn(ask=r["ask"]),)) for r in rows]
    torch.manual_seed(job.seed)
    episodes = run_episodes(generate, tasks, "", sandbox, BlockFormat(**job.fmt), job.stage["max_turns"], wording,
                            prefixes=[r["prompt"] for r in rows])
    sums: dict[str, float] = {}
    for row, episode in zip(rows, episodes):
        ctx = _context(row["params_json"], row["expectations_json"], references.get(row["reference_key"]), terms)
        scores = score_turn(episode.turns[0], ctx, spec)
        scores["exec_success"] = float(episode.turns[0].final_ok)
        for k, v in scores.items():
            sums[k] = sums.get(k, 0.0) + v
    return {k: round(v / max(1, len(rows)), 6) for k, v in sorted(sums.items())}


def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


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
        rows, references = build_rows(job, sandbox, tasks)
        probe = rows[: job.measure_rows]
        before = measure(job, model, tokenizer, sandbox, probe, references, terms)
        before_sampled = measure(job, model, tokenizer, sandbox, probe, references, terms, samples=group)
        trainer = GRPOTrainer(
            model=model, processing_class=tokenizer, args=args,
            reward_funcs=make_reward_funcs(spec, references, terms), train_dataset=Dataset.from_list(rows),
            rollout_func=make_rollout_func(job, tokenizer, sandbox, references), peft_config=peft,
        )
        counts = parameter_counts(trainer.model)
        trainer.train(resume_from_checkpoint=_last_checkpoint(out / "checkpoints"))
        after = measure(job, trainer.model, tokenizer, sandbox, probe, references, terms)
        after_sampled = measure(job, trainer.model, tokenizer, sandbox, probe, references, terms, samples=group)
    history = trainer.state.log_history
    # Every rank takes part in saving (sharded weights are gathered); rank 0 writes.
    tmp = out / ".final.tmp"
    trainer.save_model(str(tmp))
    summary = {
        "steps": trainer.state.global_step, "rows": len(rows), "measured_rows": len(probe),
        "world_size": trainer.args.world_size,
        "reward_weights": dict(zip(spec.components, spec.trl_weights)), "aggregate": spec.aggregate,
        "before": before, "after": after, "sampled_per_row": group,
        "before_sampled": before_sampled, "after_sampled": after_sampled,
        "wall_s": round(time.time() - started, 1), "completion_room": room,
        "sandbox_redacted": sandbox.redactions,    # secret values cut out of tool output (docs/sandbox.md)
        "adapter": "lora" if peft is not None else None, **counts,
    }
    if trainer.is_world_process_zero():
        with open(out / "metrics.jsonl.tmp", "w") as fh:
            for entry in history:
                fh.write(json.dumps(entry, sort_keys=True) + "\n")
        os.replace(out / "metrics.jsonl.tmp", out / "metrics.jsonl")
        tokenizer.save_pretrained(str(tmp))
        # A LoRA stage saved its adapter: keep it, and merge it into `final` (runtime.train.adapters).
        saved = out / ("adapter" if peft is not None else "final")
        if saved.exists():
            shutil.rmtree(saved)
        os.replace(tmp, saved)
        if peft is not None:
            merge_adapter(job.model_dir, saved, out / "final", tokenizer)
        summary["plots"] = _plot_curves(history, spec.components, out)
        _write_json(out / "grpo_summary.json", summary)
    return summary


# ---------------------------------------------------------------- step and CLI


STEP_CONFIG = "grpo_config.json"


def run_grpo(ctx):
    """The ``grpo`` step: GRPO from the SFT checkpoint into ``RUN_DIR/grpo``, through ``launch.sh``."""
    from runtime.step_context import StepError, StepResult
    from runtime.train.launch import PreflightError, launch_stage, preflight
    from runtime.train.stages import grpo_stage

    stage = grpo_stage(ctx.plan.recipe)
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
    # The gate step keeps every instance with its split; GRPO trains on `train` only,
    # so held-out instances never shape the policy.
    all_instances = json.loads((ctx.input_dir("gate") / "instances.json").read_text())
    _write_json(ctx.out_dir / "train_instances.json", [i for i in all_instances if i.get("split", "train") == "train"])
    ctx.input_dir("sft")
    # Paths relative to this config's directory: the run dir can move to another machine.
    _write_json(ctx.out_dir / STEP_CONFIG, {"model_dir": "../sft/craft/final", "instances": "train_instances.json",
                                            "warehouse": "../world/warehouse.duckdb", "out_dir": "."})
    command = launch_stage(ctx, "grpo", stage.name, ctx.out_dir / STEP_CONFIG)
    if not ctx.launch:
        return StepResult(metrics={"launch": "manual", "commands": {"grpo": command}})
    return StepResult(metrics={"launch": "step", "commands": {"grpo": command}, **_summary_metrics(ctx.out_dir)},
                      outputs=("final", "metrics.jsonl", "grpo_summary.json"))


def _summary_metrics(step_dir: Path) -> dict:
    from runtime.step_context import StepError

    path = step_dir / "grpo_summary.json"
    if not (path.is_file() and (step_dir / "final").is_dir()):
        raise StepError(f"GRPO left no {path.name} and final/ in {step_dir}; run the stage's launch.sh with "
                        f"{step_dir / STEP_CONFIG} first, or rerun the grpo step")
    summary = json.loads(path.read_text())
    return {"steps": summary["steps"], "wall_s": summary["wall_s"], "world_size": summary["world_size"],
            **{f"before_{k}": v for k, v in summary["before"].items() if k in ("total", "exec_success")},
            **{f"after_{k}": v for k, v in summary["after"].items() if k in ("total", "exec_success")},
            **{f"{when}_sampled_{k}": summary[f"{when}_sampled"][k] for when in ("before", "after")
               for k in ("total", "exec_success")}}


def adopt_grpo_step(ctx, step_dir: Path) -> dict:
    """The metrics of a grpo step prepared with `--no-launch` and trained by hand."""
    manifest = json.loads((step_dir / "manifest.json").read_text(encoding="utf-8"))
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
