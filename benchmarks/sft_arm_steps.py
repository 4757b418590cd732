"""Seconds per optimiser step of each sft arm, through TRL's SFTTrainer as the sft step builds it.

For a run's two datasets (RUN/dataset/dataset/stripped and .../stuffed) and its base model,
this builds the trainer the sft launch builds (runtime.train.sft: the plan's trl_config.json,
the arm's recorded max_length, the labels from the masking spec, craft's CPU head) with the
per-device batch given here (`sampler by_prefix` above 1), and times its optimiser steps.
Rounds alternate the arms (each round a fresh trainer on another seeded draw of examples,
two steps, the second timed), so a machine whose load changes slows both alike; it prints
each arm's median seconds per step and the median of the per-round stuffed/stripped ratios.
`--phase warm-up` times the `prefix_epochs` warm-up's examples (the plan's curriculum.json)
instead of the whole conversations.

Run: .venv/bin/python benchmarks/sft_arm_steps.py --plan-dir build/ads_analytics --run runs/ads_analytics
     [--batch 1 8] [--rounds 3] [--threads 1] [--phase main|warm-up]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.layout import SFT_ARMS  # noqa: E402

ARM_OF_MODE = {mode: arm for arm, mode in SFT_ARMS.items()}      # stripped -> craft, stuffed -> stuffed


def step_seconds(plan_dir: Path, run: Path, arm: str, batch: int, sampler: str, seed: int, phase: str) -> float:
    """Seconds of the second optimiser step of a fresh trainer on the ``seed``-th draw of examples."""
    from transformers import TrainerCallback

    from runtime.train.curriculum import prefix_conversations, read_curriculum
    from runtime.train.precision import load_for_training
    from runtime.train.sft import (PhaseHooks, _load_inputs, _sft_trainer, examples_reached, read_stage_plan, sft_config,
                                   tokenized_dataset)

    trl_kwargs, roles = read_stage_plan(plan_dir, "sft")
    model_dir, data_dir = run / "sft" / "base", run / "dataset" / "dataset" / arm
    tokenizer, dataset = _load_inputs(model_dir, data_dir)
    if phase == "warm-up":
        dataset = prefix_conversations(dataset, read_curriculum(plan_dir, "sft"))
    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            times.append(time.perf_counter() - self.started)

    with tempfile.TemporaryDirectory() as out:
        # The arm's measured max_length, as the run's step config records it.
        recorded = json.loads((run / "sft" / f"{ARM_OF_MODE[arm]}_config.json").read_text())["trl_overrides"]
        overrides = {"max_steps": 2, "per_device_train_batch_size": batch, "gradient_accumulation_steps": 1,
                     "seed": seed, "data_seed": seed,
                     "save_strategy": "no", "report_to": "none", "logging_steps": 1000,
                     "max_length": recorded["max_length"]}
        args = sft_config(trl_kwargs, out, overrides)
        model = load_for_training(model_dir, args, local_files_only=True)
        trainer = _sft_trainer(model, args, tokenizer, None, tokenized_dataset(tokenizer, examples_reached(dataset, args),
                                                                               roles), "main", PhaseHooks(), sampler)
        trainer.add_callback(Clock())
        trainer.train()
    return times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan-dir", type=Path, required=True, help="the compiled plan (its sft stage's settings)")
    parser.add_argument("--run", type=Path, required=True, help="a run dir with dataset/ and sft/base")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each timing one step of every arm")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (an arm of `arms concurrent` has 1)")
    parser.add_argument("--phase", choices=("main", "warm-up"), default="main")
    parser.add_argument("--arms", nargs="+", default=["stripped", "stuffed"])
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    for batch in args.batch:
        sampler = "by_prefix" if batch > 1 else "random"
        times: dict[str, list[float]] = {arm: [] for arm in args.arms}
        for seed in range(args.rounds):
            for arm in args.arms:
                times[arm].append(step_seconds(args.plan_dir, args.run, arm, batch, sampler, seed, args.phase))
        line = "; ".join(f"{arm} {statistics.median(t):.2f} s ({', '.join(f'{x:.2f}' for x in t)})"
                         for arm, t in times.items())
        if len(args.arms) == 2:
            first, second = args.arms
            ratio = statistics.median(b / a for a, b in zip(times[first], times[second]))
            line += f"; {second}/{first} {ratio:.2f}x (median of {args.rounds} rounds)"
        print(f"{args.phase}, batch {batch}, sampler {sampler}, {args.threads} thread(s), seconds per optimiser "
              f"step: {line}", flush=True)


if __name__ == "__main__":
    main()
