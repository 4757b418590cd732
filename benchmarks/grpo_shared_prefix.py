"""GRPO's loss forward and backward with each group's prompt once (`shared_prefix on`) against once per row.

For each prompt shape and group size this builds TRL's `GRPOTrainer` twice on the same
model (the ads default's tiny_moe, built here, or --model), one of them patched by
`runtime.train.grpo.prompt_groups.score_group_prompts_once`, both with the LM head
`train_grpo` gives them (craft's CPU head, runtime.train.loss_head, on CPU). A batch of
`--groups` prompts x `group` completions, left-padded prompts and right-padded
completions as TRL pads them, goes through `GRPOTrainer._compute_loss` and its
backward pass: the policy's log-prob forward of every GRPO step. Prints, per case,
tokens/s of each path at its best step (tokens: the rows' prompts and completions
without padding, counted once per row, the same for both), the ratio of the best steps
and the median of the per-round ratios (paired rounds, each path first in every other
one, at least --rounds and for --seconds), the largest per-token log-prob difference, and
each path's peak memory for one step: on a GPU, torch's peak allocated; on CPU, the
resident memory the step adds, in a fresh process per path and case.

Shapes: `stripped`, the craft arm's prompt (about 170 tokens) with completions of about
400; `stuffed`, the stuffed baseline's schema prompt (about 4,700 tokens) with the same.

Run: .venv/bin/python benchmarks/grpo_shared_prefix.py [--groups 1] [--group 4 8] [--rounds 2] [--seconds 20]
     [--shape stripped stuffed] [--model DIR] [--no-memory]
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

from shared_prefix_train import peak_resident_above   # benchmarks/ is this script's dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# (prompt tokens, completion tokens on average): the craft arm's stripped prompt, the stuffed baseline's.
SHAPES = {"stripped": (170, 400), "stuffed": (4700, 400)}


def make_batch(vocab: int, pad_id: int, groups: int, group: int, prompt: int, completion: int, device,
               seed: int = 0) -> dict:
    """TRL's batch of ``groups`` prompts (lengths within a tenth of ``prompt``, so shorter ones are
    left-padded) x ``group`` completions (half to one and a half ``completion``, right-padded)."""
    import random

    import torch
    from trl.trainer.utils import pad

    rng = random.Random(seed)
    prompts, completions = [], []
    for _ in range(groups):
        head = [rng.randrange(3, vocab) for _ in range(rng.randint(prompt - prompt // 10, prompt))]
        for _ in range(group):
            prompts.append(head)
            completions.append([rng.randrange(3, vocab) for _ in range(rng.randint(completion // 2,
                                                                                  completion + completion // 2))])
    tensors = lambda rows: [torch.tensor(r) for r in rows]     # noqa: E731
    batch = {"prompt_ids": pad(tensors(prompts), padding_value=pad_id, padding_side="left"),
             "prompt_mask": pad(tensors([[1] * len(p) for p in prompts]), padding_value=0, padding_side="left"),
             "completion_ids": pad(tensors(completions), padding_value=pad_id, padding_side="right"),
             "completion_mask": pad(tensors([[1] * len(c) for c in completions]), padding_value=0,
                                    padding_side="right"),
             "advantages": torch.tensor([(-1.0) ** r for r in range(len(prompts))])}
    batch["num_items_in_batch"] = batch["completion_mask"].sum()
    batch = {k: v.to(device) for k, v in batch.items()}
    return {**batch, "tokens": sum(len(p) + len(c) for p, c in zip(prompts, completions))}


def make_trainer(model_dir: str, rows: int, shared: bool, out_dir: str):
    """TRL's GRPOTrainer on ``model_dir`` with the head train_grpo gives it; ``shared``: patched."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from runtime.train.grpo.prompt_groups import score_group_prompts_once
    from runtime.train.loss_head import score_trained_positions_in

    gpu = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True, dtype=torch.float32)
    args = GRPOConfig(output_dir=out_dir, use_cpu=not gpu, bf16=gpu, report_to="none", num_generations=2,
                      per_device_train_batch_size=rows, max_completion_length=1024, logging_steps=1,
                      disable_tqdm=True, activation_checkpointing=False)
    trainer = GRPOTrainer(model=model, args=args, reward_funcs=lambda completions, **_: [0.0] * len(completions),
                          train_dataset=Dataset.from_list([{"prompt": "x"}] * rows))
    if gpu:
        trainer.model.to("cuda")
    score_trained_positions_in(trainer, trainer.temperature)
    if shared:
        score_group_prompts_once(trainer)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    return trainer


def step(trainer, batch: dict) -> float:
    """Seconds of one loss forward and backward (as a GRPO step runs it)."""
    import torch

    inputs = {k: v for k, v in batch.items() if k != "tokens"}
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    started = time.perf_counter()
    loss = trainer._compute_loss(trainer.model, inputs)
    loss.backward()
    sync()
    elapsed = time.perf_counter() - started
    trainer.model.zero_grad(set_to_none=True)
    return elapsed


def logps(trainer, batch: dict):
    import torch

    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    with torch.no_grad():
        return trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask,
                                                          batch["completion_ids"].size(1))[0]


def step_memory_mb(trainer, batch: dict) -> float:
    """Peak memory of one step above what was held before it: torch's on a GPU, resident on CPU."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step(trainer, batch)
        return (torch.cuda.max_memory_allocated() - before) / 2**20
    return peak_resident_above(lambda: step(trainer, batch))


def memory_probe(args) -> None:
    """One case's step memory in this fresh process (CPU: resident memory only grows)."""
    import torch

    model_dir, shape, group = args.memory_probe
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        trainer = make_trainer(model_dir, args.groups * int(group), args.shared, tmp)
        config = trainer.model.config
        batch = make_batch(config.vocab_size, config.pad_token_id or 0, args.groups, int(group), *SHAPES[shape],
                           device)
        print(json.dumps({"step_mb": step_memory_mb(trainer, batch)}))


def peak_memory(args, model_dir: str, shape: str, group: int, shared: bool) -> float:
    command = [sys.executable, __file__, "--memory-probe", model_dir, shape, str(group), "--groups", str(args.groups)]
    command += ["--shared"] if shared else []
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ).stdout
    return json.loads(out.strip().splitlines()[-1])["step_mb"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model dir (default: build the ads default's tiny_moe)")
    parser.add_argument("--shape", nargs="+", choices=sorted(SHAPES), default=["stripped", "stuffed"])
    parser.add_argument("--group", type=int, nargs="+", default=[4, 8], help="completions per prompt")
    parser.add_argument("--groups", type=int, default=1, help="prompts per forward")
    parser.add_argument("--rounds", type=int, default=2, help="paired rounds per case, at least")
    parser.add_argument("--seconds", type=float, default=20, help="more paired rounds until a case has run this long")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements")
    parser.add_argument("--memory-probe", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--shared", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe:
        return memory_probe(args)

    import torch

    from sft_loss_head import build_default_tiny_moe

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or build_default_tiny_moe(tmp)
        print(f"device: {torch.cuda.get_device_name() if device == 'cuda' else f'cpu, {torch.get_num_threads()} threads'}"
              f"; model: {model_dir if args.model else 'the ads default tiny_moe'}; {args.groups} prompts per forward; "
              "loss forward + backward of GRPOTrainer._compute_loss")
        for shape in args.shape:
            for group in args.group:
                rows = args.groups * group
                plain, shared = (make_trainer(model_dir, rows, s, f"{tmp}/out") for s in (False, True))
                config = plain.model.config
                batch = make_batch(config.vocab_size, config.pad_token_id or 0, args.groups, group, *SHAPES[shape],
                                   device)
                gap = float((logps(plain, batch) - logps(shared, batch)).abs().max())
                # Warm both on a small batch of the same rows: a stuffed step of the plain path takes
                # tens of seconds on 2 busy cores, and its first call costs no more than the next.
                small = make_batch(config.vocab_size, config.pad_token_id or 0, args.groups, group, 32, 32, device)
                step(plain, small), step(shared, small)
                # Paired rounds, each path first in every other one, until --seconds are spent (at least
                # --rounds): on a shared machine the other load comes and goes within a case.
                plain_s, shared_s, started = [], [], time.perf_counter()
                while len(plain_s) < args.rounds or time.perf_counter() - started < args.seconds:
                    first, second = (plain, shared) if len(plain_s) % 2 == 0 else (shared, plain)
                    times = {id(first): step(first, batch), id(second): step(second, batch)}
                    plain_s.append(times[id(plain)])
                    shared_s.append(times[id(shared)])
                ratio = statistics.median(a / b for a, b in zip(plain_s, shared_s))
                tokens = batch["tokens"]
                best_plain, best_shared = min(plain_s), min(shared_s)
                line = (f"{shape:8s} group {group}: {rows} rows, {tokens:,} tokens; best plain {best_plain:.2f} s/step "
                        f"({tokens / best_plain:,.0f} tok/s), best shared {best_shared:.2f} s/step "
                        f"({tokens / best_shared:,.0f} tok/s); shared/plain throughput {best_plain / best_shared:.2f}x "
                        f"best to best, {ratio:.2f}x median of {len(plain_s)} paired rounds; largest log-prob "
                        f"difference {gap:.1e}")
                del plain, shared
                if not args.no_memory:
                    plain_mb, shared_mb = (peak_memory(args, model_dir, shape, group, s) for s in (False, True))
                    line += (f"; step memory plain {plain_mb:,.0f} MB, shared {shared_mb:,.0f} MB "
                             f"(shared/plain {shared_mb / plain_mb:.2f})")
                print(line, flush=True)


if __name__ == "__main__":
    main()
