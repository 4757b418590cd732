"""Two SFT arms at once on a small CPU: one arm on every core, or both arms side by side?

The sft step trains its two arms (stripped and stuffed) one after the other, each with
every core. This times the other schedule on the same machine: one training process with
all N cores' threads, against N processes of one thread each running at the same time
(the arms side by side). Each process trains the ads recipe's default tiny_moe (or
MODEL_DIR) on one sequence of LENGTH tokens, its last TRAINED share trained, as the
sft step does (forward, backward, AdamW step, craft's CPU LM head).

Prints, per shape, the steps per second of the one process and of all side-by-side
processes together, and their ratio (median over rounds; the two schedules alternate).

Run: .venv/bin/python benchmarks/sft_threads.py [--model MODEL_DIR] [--seconds 20] [--rounds 2]
     [--shape 800:0.25 --shape 5000:0.06]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def train_for(model_dir: str, seconds: float, length: int, share: float) -> dict:
    """One training process: steps done in `seconds` after 3 warm-up steps."""
    import torch

    from sft_loss_head import load

    torch.manual_seed(0)
    model = load(model_dir, craft_head=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    input_ids = torch.randint(0, model.config.vocab_size, (1, length))
    labels = input_ids.clone()
    labels[:, : length - int(length * share)] = -100

    def step() -> None:
        outputs = model(input_ids=input_ids, labels=labels, fused_lm_head=True)
        (-outputs.log_probs.sum() / outputs.label_mask.sum()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        step()
        steps += 1
    return {"steps": steps, "seconds": time.perf_counter() - started, "threads": torch.get_num_threads()}


def side_by_side(model_dir: str, processes: int, threads: int, seconds: float, shape: str) -> float:
    """Steps per second of `processes` training processes of `threads` threads each, run at once."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, __file__, "--worker", model_dir, "--seconds", str(seconds), "--shape", shape]
    running = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    results = [json.loads(proc.communicate()[0].strip().splitlines()[-1]) for proc in running]
    assert all(r["threads"] == threads for r in results), results
    return sum(r["steps"] / r["seconds"] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model dir (default: build the default tiny_moe)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--shape", action="append", help="LENGTH:TRAINED_SHARE, e.g. 800:0.25")
    parser.add_argument("--worker", metavar="MODEL_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    shapes = args.shape or ["800:0.25", "5000:0.06"]
    if args.worker:
        length, share = shapes[0].split(":")
        print(json.dumps(train_for(args.worker, args.seconds, int(length), float(share))))
        return

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        from sft_loss_head import build_default_tiny_moe

        model_dir = args.model or build_default_tiny_moe(tmp)
        print(f"{cores} cores: one process of {cores} threads against {cores} processes of 1 thread at once, "
              f"{args.seconds:g} s each, {args.rounds} rounds")
        for shape in shapes:
            one, apart = [], []
            for _ in range(args.rounds):
                one.append(side_by_side(model_dir, 1, cores, args.seconds, shape))
                apart.append(side_by_side(model_dir, cores, 1, args.seconds, shape))
            ratio = statistics.median(b / a for a, b in zip(one, apart))
            length, share = shape.split(":")
            print(f"{length} tokens, {float(share):.0%} trained: one process {statistics.median(one):.2f} steps/s, "
                  f"{cores} side by side {statistics.median(apart):.2f} steps/s together; "
                  f"side by side / one {ratio:.2f}x")


if __name__ == "__main__":
    main()
