"""GRPO rollout throughput: the agent loop with and without overlapping generation and the sandbox.

Plays the GRPO step's rollouts (`runtime.train.grpo.rollout.play`, sampling at the stage's
temperature, `max_turns` model calls per user turn) over training instances of a
finished run, with the run's SFT model (the default profile's model), in two modes:

- plain: every step generates for all rollouts, then runs all their code;
- overlap: two cohorts, one generating while the other's code runs.

The modes alternate (A B A B ...) with the same seed per round, and the printed ratio
is the median of the per-round ratios (the machine may be shared).

Usage:
    python benchmarks/rollout.py RUN_DIR PLAN_DIR [--rollouts 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a finished run (sft, grpo steps done)")
    parser.add_argument("plan_dir", type=Path, help="its plan dir")
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    ns = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from runtime.agent import HFGenerator
    from runtime.sandbox import SandboxLimits, SandboxPool
    from runtime.train.grpo import GRPOJob, build_rows
    from runtime.train.grpo.rollout import play
    from runtime.train.grpo.rows import load_training_tasks

    job = GRPOJob.from_plan(ns.plan_dir, "grpo", ns.run_dir / "grpo" / "grpo_config.json")
    model_dir = ns.run_dir / "sft" / "craft" / "final"
    model, tokenizer = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    tasks = load_training_tasks(job)
    with SandboxPool(job.workers, job.warehouse, SandboxLimits(), job.api_factory) as sandbox:
        rows, plays = build_rows(job, sandbox, tasks)
        picked = [plays[r["row_key"]] for r in random.Random(0).sample(rows, min(ns.rollouts, len(rows)))]
        generate = HFGenerator(model, tokenizer, max_new_tokens=job.stage["max_new_tokens"], do_sample=True,
                               temperature=job.stage["temperature"], batch_size=len(picked))

        def timed(overlap: bool) -> tuple[float, int]:
            torch.manual_seed(0)
            start = time.perf_counter()
            episodes, _, gens = play(job, generate, sandbox, picked, [p.prompt for p in picked], overlap=overlap)
            wall = time.perf_counter() - start
            return len(picked) / wall, sum(len(g) for g in gens)

        timed(False)                                   # warm-up: first-call costs count for neither
        results = {"plain": [], "overlap": []}
        for _ in range(ns.rounds):
            for mode in ("plain", "overlap"):
                results[mode].append(timed(mode == "overlap"))
    ratios = [o[0] / p[0] for p, o in zip(results["plain"], results["overlap"])]
    out = {mode: {"rollouts_per_s": [round(r, 3) for r, _ in values], "model_calls": [c for _, c in values]}
           for mode, values in results.items()}
    out.update(rollouts=len(picked), overlap_over_plain_median=round(statistics.median(ratios), 3),
               ratios=[round(r, 3) for r in ratios])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
