"""Measuring the policy: its mean reward on a fixed set of rows, before and after training.

The same seeded rows are played greedily (what an evaluation sees) and sampled at the
stage's temperature (what GRPO optimises), and scored exactly as the reward functions
score a training rollout.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from craftc.atomic import write_atomic
from runtime.train.grpo.job import GRPOJob, reward_spec
from runtime.train.grpo.rewards import score_episode
from runtime.train.grpo.rollout import play, rollout_copy_bias
from runtime.train.grpo.rows import RolloutTask

__all__ = ["measure", "measured_before", "before_key", "paired_change", "measure_every_callback", "measured_curve",
           "MEASURED", "BEFORE_FILE"]

# What the before/after change is reported for.
CHANGED = ("total", "outcome", "exec_success")
# The prefix of a measurement's keys in the trainer's log history (`measure_every`).
MEASURED = "measured/"
# The before measurement, saved in the stage's output dir as soon as it is taken.
BEFORE_FILE = "measured_before.json"


def measure(job: GRPOJob, model, tokenizer, sandbox, probe: list[RolloutTask], terms=None,
            samples: int = 0, llm_judge=None, scores: list | None = None) -> dict:
    """Mean R_total, each component and execution success over the ``probe`` rollout tasks.

    ``samples=0`` decodes greedily (what an evaluation sees). ``samples=k`` draws k
    completions per task at the stage's temperature, seeded, which is the policy GRPO
    actually optimises: its expected reward is what a step should raise. ``scores``, when
    given, receives each rollout's ``(instance id, {component: score})`` in order, for
    :func:`paired_change`.
    """
    import torch

    from runtime.agent import HFGenerator

    spec = reward_spec(job)
    # As many conversations per generate call as a training step's rollouts of one process
    # (runtime.train.grpo.rollout decodes a step's prompts together): the stage's setting,
    # not a constant of this module.
    generate = HFGenerator(model, tokenizer, max_new_tokens=job.stage["max_new_tokens"],
                           batch_size=job.stage["per_device_batch"],
                           do_sample=samples > 0, temperature=job.stage["temperature"], frozen=True,
                           copy_bias=rollout_copy_bias(job),   # decoded as the rollouts are
                           logprobs=False)   # scored by rewards only
    tasks = [task for task in probe for _ in range(max(samples, 1))]
    torch.manual_seed(job.seed)
    episodes, _, _ = play(job, generate, sandbox, tasks, [t.prompt for t in tasks])
    sums: dict[str, float] = {}
    for task, episode in zip(tasks, episodes):
        scored = score_episode(episode, task, spec, terms, llm_judge)
        if scores is not None:
            scores.append((task.task.id.split("/")[0], scored))
        for k, v in scored.items():
            sums[k] = sums.get(k, 0.0) + v
    return {k: round(v / max(1, len(tasks)), 6) for k, v in sorted(sums.items())}


def before_key(job: GRPOJob, probe: list[RolloutTask]) -> str:
    """What the before measurement depends on: the model's files, the rows, and how they are played and scored."""
    model = Path(job.model_dir)
    files = sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in model.iterdir() if f.is_file()) \
        if model.is_dir() else []
    what = {"model": [str(model), files], "seed": job.seed, "stage": job.stage, "reward": job.reward,
            "system_prompt": job.system_prompt, "wording": job.wording, "fmt": job.fmt,
            "earlier_turns": job.earlier_turns, "rows": [t.task.id for t in probe]}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def measured_before(path: Path, key: str, take, save: bool = True) -> tuple[dict, dict, list, list]:
    """The policy measured before training: greedy and sampled means and their per-rollout scores.

    Taken by ``take()`` and saved at ``path`` (``save``: on the process that writes),
    or read back from there when an interrupted run of the same stage, on the same model
    and rows (``key``: :func:`before_key`), took it already: the runner keeps the stage's
    output dir on resume, and a measurement of the same model is the same, so a resumed
    run does not decode it again. Skipping it moves no training RNG: the trainer seeds
    its own at construction.
    """
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["greedy"], saved["sampled"], saved["greedy_scores"], saved["sampled_scores"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass                                    # none yet, or unreadable: measure again
    greedy, sampled, greedy_scores, sampled_scores = take()
    if save:
        write_atomic(path, json.dumps({"key": key, "greedy": greedy, "sampled": sampled,
                                       "greedy_scores": greedy_scores, "sampled_scores": sampled_scores},
                                      sort_keys=True) + "\n")
    return greedy, sampled, greedy_scores, sampled_scores


def paired_change(after: list, before: list) -> dict:
    """After minus before over the same rollouts, per component, with a clustered interval.

    ``after`` and ``before`` are :func:`measure`'s ``scores`` of one probe (the same tasks
    in the same order); the rollouts of one instance (its turns, its samples) form one
    cluster (``runtime.eval.stats.paired_clustered_difference``).
    """
    from runtime.eval.stats import paired_clustered_difference

    if len(after) != len(before) or [c for c, _ in after] != [c for c, _ in before]:
        raise ValueError("before and after were measured on different rollouts")
    clusters = [c for c, _ in after]
    return {name: paired_clustered_difference([s.get(name) for _, s in after], [s.get(name) for _, s in before],
                                              clusters) for name in CHANGED}


def measure_every_callback(every: int, measure_model):
    """A `TrainerCallback` that measures the policy greedily every ``every`` steps.

    ``measure_model(model)`` returns :func:`measure`'s means. Each point goes into the
    trainer's log history as ``measured/<component>`` at its step, so it is saved with the
    checkpoints (a resumed run keeps the points it had) and lands in ``metrics.jsonl``.
    The last step is left to the after-training measurement, which is the same one.
    A measurement seeds the random generators (:func:`measure`); their states are put back
    after it, so that measuring does not change what the later steps sample and train.
    """
    import torch
    from transformers import TrainerCallback   # here, so importing this module stays light

    class MeasureEvery(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            step = state.global_step
            if every and step % every == 0 and step < state.max_steps:
                python_state = random.getstate()
                with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
                    point = measure_model(model)
                random.setstate(python_state)
                state.log_history.append({"step": step, **{MEASURED + k: v for k, v in point.items()}})

    return MeasureEvery()


def measured_curve(before: dict, log_history: list[dict], after: dict, steps: int) -> list[dict]:
    """The greedy measurement over the steps: before (step 0), every logged point, after."""
    points = [{"step": 0, **before}]
    points += [{"step": h["step"], **{k[len(MEASURED):]: v for k, v in h.items() if k.startswith(MEASURED)}}
               for h in log_history if any(k.startswith(MEASURED) for k in h)]
    return points + [{"step": steps, **after}]
