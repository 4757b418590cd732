"""First calls of an eval arm at several batch sizes: wall time, and whether the greedy completions agree.

The eval step asks every held-out instance's first question at once and decodes the calls
in batches (`eval { batch N }`). Decoding a small model on a CPU pays a fixed cost per
generated token and batch, so fewer, larger batches cut that cost; this prints the wall
time of the same ROWS first calls at each batch size, with the plan's copy bias, and how
many completions are token for token those of the first size (padding can move a float
in the last place and change a greedy choice).

Run: .venv/bin/python benchmarks/eval_batch.py MODEL_DIR PLAN_DIR RUN_DIR [--arm craft]
     [--rows 32] [--sizes 8,16,32] [--new-tokens 512]
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
    args = parser.parse_args()

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


if __name__ == "__main__":
    main()
