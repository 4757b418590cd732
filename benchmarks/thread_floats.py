"""Does a trainer's thread count change its floats, and what does MKL's strict mode cost?

The sft step hands a finished arm's core to the arm still training (runtime/train/core_share.py)
and sets `MKL_CBWR=AUTO,STRICT`, so the handover does not change the model. For each mode
(MKL's default, strict) this starts a fresh process (the mode is read when MKL loads) that
times training steps of MODEL_DIR on one sequence of each LENGTH, on 1 and on 2 threads
(forward, backward, AdamW step), and says whether the gradients on 1 and 2 threads are the
same bits.

Run: .venv/bin/python benchmarks/thread_floats.py MODEL_DIR [--lengths 800,5000] [--steps 4] [--rounds 2]
e.g. after `make run`: runs/ads_analytics/sft/stuffed/final
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

MODES = {"default": None, "strict": "AUTO,STRICT"}

CHILD = r"""
import json, sys, time, torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
steps, rounds = int(sys.argv[3]), int(sys.argv[4])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
out = {}
for length in map(int, sys.argv[2].split(",")):
    ids = torch.randint(5, model.config.vocab_size, (1, length), generator=torch.Generator().manual_seed(0))
    grads, times = {}, {1: [], 2: []}
    for threads in (1, 2):                     # gradients of the same weights on each count
        torch.set_num_threads(threads)
        model.zero_grad()
        model(input_ids=ids, labels=ids).loss.backward()
        grads[threads] = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    for _ in range(rounds):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            started = time.perf_counter()
            for _ in range(steps):
                model(input_ids=ids, labels=ids).loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            times[threads].append((time.perf_counter() - started) / steps)
    out[length] = {"same_bits": all(torch.equal(a, b) for a, b in zip(grads[1], grads[2])),
                   "s_per_step": {t: [round(x, 3) for x in v] for t, v in times.items()}}
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("--lengths", default="800,5000")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"model {args.model_dir}, {args.steps} steps per timing, {args.rounds} rounds; seconds per step")
    print(f"{'mode':8} {'tokens':>7} {'1 thread':>16} {'2 threads':>16}  gradients on 1 and 2 threads")
    for mode, value in MODES.items():
        env = {k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "OMP_NUM_THREADS")}
        if value:
            env["MKL_CBWR"] = value
        done = subprocess.run([sys.executable, "-c", CHILD, args.model_dir, args.lengths, str(args.steps),
                               str(args.rounds)], env=env, capture_output=True, text=True, check=True)
        for length, row in json.loads(done.stdout.strip().splitlines()[-1]).items():
            one, two = (", ".join(f"{x:.3f}" for x in row["s_per_step"][t]) for t in ("1", "2"))
            print(f"{mode:8} {int(length):>7,} {one:>16} {two:>16}  "
                  f"{'same bits' if row['same_bits'] else 'different bits'}")


if __name__ == "__main__":
    main()
