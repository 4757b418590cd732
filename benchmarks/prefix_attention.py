"""An eval batch decoded with each row attending its own copy of the shared prefix, and with
the prefix read once for all rows (`runtime.agent.prefix_attention`).

Takes an arm's system prompt from a compiled plan (the stuffed baseline's, by default: the
whole schema) and the first ROWS held-out questions of a run, and asks them as one batch
of a frozen generator, as the eval step does, alternating the two paths ROUNDS times. It
prints each call's wall time and whether the two paths gave the same completions, with the
largest difference of their log-probs.

Run: .venv/bin/python benchmarks/prefix_attention.py MODEL_DIR PLAN_DIR RUN_DIR [--rows 32]
     [--new-tokens 512] [--rounds 2] [--arm stuffed]
e.g. after `make run`: runs/ads_analytics/sft/stuffed/final build/ads_analytics runs/ads_analytics
"""

from __future__ import annotations

import time

from shared_prefix import first_calls_args, load_first_calls

from runtime.agent import HFGenerator


def main() -> None:
    parser = first_calls_args(__doc__.splitlines()[0], rows=32, new_tokens=512)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    batch, tokenizer, model = load_first_calls(args)
    outputs = {}
    for _ in range(args.rounds):
        for once in (False, True):
            generate = HFGenerator(model, tokenizer, max_new_tokens=args.new_tokens, batch_size=len(batch),
                                   frozen=True, prefix_attention=once)
            generate(batch[:2])                      # the frozen prefix cache is built outside the timing
            started = time.perf_counter()
            outputs[once] = generate(batch)
            print(f"  {'prefix read once ' if once else 'a copy per row   '}: {time.perf_counter() - started:6.2f} s, "
                  f"{sum(len(g.completion_ids) for g in outputs[once]):,} tokens generated")
    same = [a.completion_ids == b.completion_ids for a, b in zip(outputs[False], outputs[True])]
    diff = max((abs(x - y) for a, b in zip(outputs[False], outputs[True]) if a.completion_ids == b.completion_ids
                for x, y in zip(a.logprobs, b.logprobs)), default=0.0)
    print(f"  same completions: {sum(same)} of {len(same)}; largest log-prob difference {diff:.1e}")


if __name__ == "__main__":
    main()
