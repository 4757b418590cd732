"""First calls of an eval arm at several batch sizes: wall time, and whether the greedy completions agree.

The eval step asks every held-out instance's first question at once and decodes the calls
in batches (`eval { batch N }`). Decoding a small model on a CPU pays a fixed cost per
generated token and batch, so fewer, larger batches cut that cost; this prints the wall
time of the same ROWS first calls at each batch size, with the plan's copy bias, and how
many completions are token for token those of the first size (padding can move a float
in the last place and change a greedy choice).

`--episodes` times the arm's whole eval instead, as the eval step runs it (runtime.eval.step.
evaluate_arm: every turn, repairs and follow-ups, the sandbox, the plan's split, limit, max
new tokens and earlier turns): seconds, model calls, passed turns, and whether every call's
completion text is that of the first size.

Run: .venv/bin/python benchmarks/eval_batch.py MODEL_DIR PLAN_DIR RUN_DIR [--arm craft]
     [--rows 32] [--sizes 8,16,32] [--new-tokens 512] [--episodes]
e.g. after `make run`: runs/ads_analytics/grpo/final build/ads_analytics runs/ads_analytics
(the craft arm), or runs/ads_analytics/sft/stuffed/final with --arm stuffed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from runtime.agent import HFGenerator
from runtime.plan import load_plan
from shared_prefix import first_calls   # benchmarks/, on the path when this file runs as a script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("plan_dir", type=Path)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--arm", default="craft")
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--sizes", default="8,16,32")
    parser.add_argument("--new-tokens", type=int, default=512)
    parser.add_argument("--episodes", action="store_true", help="time the arm's whole eval, not its first calls")
    args = parser.parse_args()
    if args.episodes:
        return whole_arm(args.model_dir, args.plan_dir, args.run_dir, args.arm, [int(s) for s in args.sizes.split(",")])

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    copy_bias = load_plan(args.plan_dir).recipe.eval.copy_bias
    batch = first_calls(args.plan_dir, args.run_dir, args.arm, args.rows)
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32)
    print(f"model {args.model_dir}, arm {args.arm}, {len(batch)} first calls, up to {args.new_tokens} new tokens, "
          f"copy bias {copy_bias:g}, {torch.get_num_threads()} threads")
    first = None
    for size in (int(s) for s in args.sizes.split(",")):
        generate = HFGenerator(model, tokenizer, max_new_tokens=args.new_tokens, batch_size=size, frozen=True,
                               copy_bias=copy_bias)
        generate(batch[:1])  # the kept schema prefix and the first forward's warm-up, outside the timing
        started = time.perf_counter()
        out = generate(batch)
        wall = time.perf_counter() - started
        new = sum(len(g.completion_ids) for g in out)
        first = first or out
        same = sum(a.completion_ids == b.completion_ids for a, b in zip(first, out))
        print(f"  batch {size:3d}: {wall:7.1f} s, {new:,} new tokens ({new / wall:,.0f}/s), "
              f"same completions as the first size: {same} of {len(out)}")


def whole_arm(model_dir: Path, plan_dir: Path, run_dir: Path, arm: str, sizes: list[int]) -> None:
    """The arm's eval, as the eval step runs it (its own inputs, sandbox and arm runner), once per batch size."""
    from rich.console import Console

    from runtime.eval import step as eval_step
    from runtime.step_context import StepContext

    plan = load_plan(plan_dir)
    ctx = StepContext(plan=plan, plan_dir=plan_dir, run_dir=run_dir, out_dir=run_dir / "eval", console=Console(),
                      seed=plan.recipe.seed)
    inputs = eval_step.eval_inputs(ctx)
    print(f"model {model_dir}, arm {arm}: the whole eval of {len(inputs.tasks)} {inputs.split} instances, "
          f"up to {inputs.max_new_tokens} new tokens a call")
    first = None
    with eval_step.eval_sandbox(ctx, inputs.tasks) as sandbox:
        references = eval_step.reference_frames(inputs.tasks, sandbox)
        excluded = eval_step.exclusions(inputs.tasks, references)
        for size in sizes:
            started = time.perf_counter()
            episodes = eval_step.run_arm(inputs, arm, model_dir, sandbox, references, excluded, batch_size=size)
            wall = time.perf_counter() - started
            texts = [call.text for e in episodes for turn in e.turns for call in turn.calls]
            first = first or texts
            passed = sum(bool(turn.passed) for e in episodes for turn in e.turns)
            print(f"  batch {size:3d}: {wall:7.1f} s, {len(texts)} model calls, {passed} turns passed, "
                  f"completions the same as the first size's: {first == texts}")


if __name__ == "__main__":
    main()
