"""SFT steps on stuffed-arm batches: the plain padded batch against the packed shared-prefix one.

A stuffed example is the ~4,700-token schema prompt and a few hundred tokens of its own.
For each batch size this times, round by round, one training step (forward with SFT's LM
head, backward) on the same examples collated by TRL's collator and by craft's
`SharedPrefixCollator` (runtime.train.prefix_groups), and prints tokens/s of each (tokens:
the examples' own, without padding, the same for both), the median of the per-round
throughput ratios, the two losses' largest difference, and each path's peak memory: the
resident memory one step adds, measured in a fresh process per path and batch size.

Examples: a synthetic schema prompt of --prefix tokens and own parts of --own tokens on
average (the ads recipe's default tiny_moe, built here), or the first examples of a real
stuffed dataset (--dataset DIR with its run's base model, --model DIR), tokenized and
masked as the sft step does.

Run: .venv/bin/python benchmarks/shared_prefix_train.py [--batch 1 4 8 16] [--rounds 3]
     [--prefix 4745 --own 300] [--model RUN/sft/base --dataset RUN/dataset/dataset/stuffed]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def synthetic_examples(vocab: int, batch: int, prefix: int, own: int, seed: int = 0) -> list[dict]:
    """``batch`` examples: one shared prompt of ``prefix`` tokens (masked) and own parts of ``own`` tokens
    on average (half to one and a half times it), of which the first fifth is masked (the question)."""
    import random

    rng = random.Random(seed)
    head = [rng.randrange(3, vocab) for _ in range(prefix)]
    out = []
    for _ in range(batch):
        n = rng.randint(own // 2, own + own // 2)
        tail = [rng.randrange(3, vocab) for _ in range(n)]
        ids = head + tail
        masked = prefix + n // 5
        out.append({"input_ids": ids, "labels": [-100] * masked + ids[masked:]})
    return out


def dataset_examples(model_dir: str, dataset_dir: str, batch: int) -> list[dict]:
    """The first ``batch`` conversations of a dataset, with the labels the sft step trains (assistant output)."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    from runtime.train.masking import ASSISTANT_ONLY, labels_for

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = load_from_disk(dataset_dir).select(range(batch))
    return [labels_for(tokenizer, row["messages"], ASSISTANT_ONLY) for row in rows]


def load(model_dir: str, shared: bool):
    from sft_loss_head import load as load_with_sft_head

    from runtime.train.prefix_groups import use_shared_prefix

    model = load_with_sft_head(model_dir, craft_head=True)      # SFT's head, as the trainer gives it
    if shared:
        use_shared_prefix(model)
    return model


def collate(examples: list[dict], shared: bool, pad_id: int) -> dict:
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from runtime.train.prefix_groups import SharedPrefixCollator

    plain = DataCollatorForLanguageModeling(pad_token_id=pad_id)
    return SharedPrefixCollator(plain)(examples) if shared else plain(examples)


def step(model, batch: dict) -> tuple[float, float]:
    started = time.perf_counter()
    outputs = model(**batch, fused_lm_head=True)
    loss = -outputs.log_probs.sum() / outputs.label_mask.sum()
    loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - started, float(loss.detach())


def examples_for(args, model_dir: str, batch: int, vocab: int) -> list[dict]:
    if args.dataset:
        return dataset_examples(model_dir, args.dataset, batch)
    return synthetic_examples(vocab, batch, args.prefix, args.own)


def peak_memory(args, model_dir: str, batch: int, shared: bool) -> float:
    """MB of resident memory one step adds, in a fresh process (the peak only ever grows)."""
    command = [sys.executable, __file__, "--memory-probe", model_dir, "--batch", str(batch),
               "--prefix", str(args.prefix), "--own", str(args.own)]
    command += ["--shared"] if shared else []
    command += ["--dataset", args.dataset] if args.dataset else []
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ).stdout
    return json.loads(out.strip().splitlines()[-1])["step_mb"]


def resident_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_resident_above(run) -> float:
    """The highest resident memory while ``run()`` runs, above what the process held before it
    (sampled every 2 ms: the process's lifetime peak is the model load's for a small batch)."""
    before, peak, done = resident_mb(), [0.0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], resident_mb())
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    run()
    done.set()
    watcher.join()
    return max(peak[0], resident_mb()) - before


def memory_probe(args) -> None:
    """The highest resident memory during one step, above what the process held before it."""
    model = load(args.memory_probe, args.shared)
    batch = collate(examples_for(args, args.memory_probe, args.batch[0], model.config.vocab_size), args.shared,
                    model.config.pad_token_id or 0)
    print(json.dumps({"step_mb": peak_resident_above(lambda: step(model, batch))}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model dir (default: build the ads default's tiny_moe)")
    parser.add_argument("--dataset", help="a stuffed dataset dir (a `messages` column); default: synthetic")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds per batch size")
    parser.add_argument("--prefix", type=int, default=4745, help="synthetic schema prompt tokens (the ads recipe's)")
    parser.add_argument("--own", type=int, default=300, help="synthetic own tokens per example, on average")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes")
    parser.add_argument("--memory-probe", help=argparse.SUPPRESS)
    parser.add_argument("--shared", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe:
        return memory_probe(args)

    import torch

    from sft_loss_head import build_default_tiny_moe

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or build_default_tiny_moe(tmp)
        plain_model, shared_model = load(model_dir, False), load(model_dir, True)
        vocab, pad = plain_model.config.vocab_size, plain_model.config.pad_token_id or 0
        print(f"model: {type(plain_model).__name__}, {sum(p.numel() for p in plain_model.parameters()):,} parameters, "
              f"{torch.get_num_threads()} threads; examples: "
              + (args.dataset if args.dataset else f"synthetic, {args.prefix}-token prompt + ~{args.own} own tokens"))
        for batch_size in args.batch:
            examples = examples_for(args, model_dir, batch_size, vocab)
            plain, shared = collate(examples, False, pad), collate(examples, True, pad)
            tokens = sum(len(e["input_ids"]) for e in examples)
            step(plain_model, plain), step(shared_model, shared)        # warm both
            plain_s, shared_s, gap = [], [], 0.0
            for _ in range(args.rounds):
                (a, plain_loss), (b, shared_loss) = step(plain_model, plain), step(shared_model, shared)
                plain_s.append(a)
                shared_s.append(b)
                gap = max(gap, abs(plain_loss - shared_loss))
            ratio = statistics.median(a / b for a, b in zip(plain_s, shared_s))
            line = (f"batch {batch_size:2d}: {tokens:,} tokens; plain {tokens / statistics.median(plain_s):,.0f} tok/s, "
                    f"shared {tokens / statistics.median(shared_s):,.0f} tok/s; shared/plain throughput {ratio:.2f}x "
                    f"(median of {args.rounds} paired rounds); loss difference {gap:.1e}")
            if not args.no_memory:
                plain_mb = peak_memory(args, model_dir, batch_size, False)
                shared_mb = peak_memory(args, model_dir, batch_size, True)
                line += (f"; step memory plain {plain_mb:,.0f} MB, shared {shared_mb:,.0f} MB "
                         f"(shared/plain {shared_mb / plain_mb:.2f})")
            print(line, flush=True)


if __name__ == "__main__":
    main()
