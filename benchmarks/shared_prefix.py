"""First calls of an eval arm with and without reading the shared system prompt once.

Takes an arm's system prompt from a compiled plan (the stuffed baseline's, by default: the
whole schema) and the first ROWS held-out questions of a run, and asks them as one batch,
as the eval step does, with `HFGenerator(share_prefix=False)` (every row left-padded and
read whole) and with the default (the shared prefix read once, `runtime.agent.shared_prefix`).
It prints each path's wall time, the input tokens the model read, and whether the two
gave the same completions.

Run: .venv/bin/python benchmarks/shared_prefix.py MODEL_DIR PLAN_DIR RUN_DIR [--rows 4]
     [--new-tokens 32] [--arm stuffed]
e.g. with a `make run PROFILE=pretrained` run: RUN_DIR/sft/stuffed/final build/ads_analytics
runs/ads_analytics. Few new tokens keep the comparison on the prefill, which is what differs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from runtime.agent import HFGenerator, load_tasks


class ReadCounter:
    """Counts the input tokens the model's forward reads (prefill and decoding).

    A forward pre-hook, not a wrapped ``forward``: ``generate`` reads the signature of
    ``forward`` to decide whether to pass position ids.
    """

    def __init__(self, model):
        self.read = 0
        model.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.read += int(ids.numel()) if ids is not None else 0


def first_calls(plan_dir: Path, run_dir: Path, arm: str, rows: int) -> list[list[dict]]:
    """The first calls of an eval arm: its system prompt and the first ``rows`` held-out questions."""
    builder = json.loads((plan_dir / "specs/input_builder.json").read_text())
    system = (plan_dir / builder["modes"][builder["eval_arms"][arm]]["system_prompt"]).read_text()
    tasks = load_tasks(run_dir / "dataset/dataset/eval_instances.json")[:rows]
    return [[{"role": "system", "content": system}, {"role": "user", "content": t.turns[0].ask}] for t in tasks]


def first_calls_args(description: str, rows: int, new_tokens: int) -> argparse.ArgumentParser:
    """The arguments of a benchmark that decodes an arm's first calls as one batch."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("plan_dir", type=Path)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--rows", type=int, default=rows)
    parser.add_argument("--new-tokens", type=int, default=new_tokens)
    parser.add_argument("--arm", default="stuffed")
    return parser


def load_first_calls(args: argparse.Namespace):
    """``(batch, tokenizer, model)`` for :func:`first_calls_args`' arguments, the setting printed."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    batch = first_calls(args.plan_dir, args.run_dir, args.arm, args.rows)
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32)
    print(f"model {args.model_dir}, arm {args.arm}, {len(batch)} questions in one batch, "
          f"{args.new_tokens} new tokens, {torch.get_num_threads()} threads")
    return batch, tokenizer, model


def main() -> None:
    args = first_calls_args(__doc__.splitlines()[0], rows=4, new_tokens=32).parse_args()
    batch, tokenizer, model = load_first_calls(args)
    counter = ReadCounter(model)
    outputs = {}
    for share in (False, True):
        generate = HFGenerator(model, tokenizer, max_new_tokens=args.new_tokens, batch_size=len(batch),
                               share_prefix=share, frozen=True)
        counter.read, started = 0, time.perf_counter()
        outputs[share] = generate(batch)
        wall = time.perf_counter() - started
        prompt = sum(g.input_tokens for g in outputs[share])
        print(f"  {'shared prefix' if share else 'plain        '}: {wall:7.1f} s, model read {counter.read:,} "
              f"input tokens for {prompt:,} prompt tokens")
    same = [a.completion_ids == b.completion_ids for a, b in zip(outputs[False], outputs[True])]
    print(f"  same completions: {sum(same)} of {len(same)}")


if __name__ == "__main__":
    main()
