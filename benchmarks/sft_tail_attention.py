"""One SFT step (forward, backward) of a long prompt, with and without the last layer's tail attention.

craft's head (runtime.train.loss_head) on the ads recipe's default tiny_moe (or MODEL_DIR)
for one sequence of LENGTH tokens whose last TRAINED share is trained, as a stuffed
example is: pair by pair, a step whose last layer attends only from the first trained
position (runtime.train.tail_attention) and one that attends everywhere (the switch off).
Prints each one's median ms per step, the median of the pairwise ratios, and the largest
difference of the two losses.

Run: .venv/bin/python benchmarks/sft_tail_attention.py [--model MODEL_DIR] [--pairs 10]
     [--shape 5000:0.06 --shape 2000:0.1] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from sft_loss_head import build_default_tiny_moe, load, step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model dir (default: build the default tiny_moe)")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--shape", action="append", help="LENGTH:TRAINED_SHARE, e.g. 5000:0.06")
    args = parser.parse_args()

    import torch

    from runtime.train import tail_attention

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or build_default_tiny_moe(tmp)
        model = load(model_dir, True)
        vocab = model.config.vocab_size
        print(f"model: {type(model).__name__}, {sum(p.numel() for p in model.parameters()):,} "
              f"parameters, vocab {vocab}, {torch.get_num_threads()} threads")

        def timed(input_ids, labels, tail: bool):
            tail_attention.MIN_TAIL_START = 1024 if tail else 10**9
            return step(model, input_ids, labels)

        for shape in args.shape or ["5000:0.06", "2000:0.1"]:
            length, share = int(shape.split(":")[0]), float(shape.split(":")[1])
            input_ids = torch.randint(0, vocab, (1, length))
            labels = input_ids.clone()
            labels[:, : length - int(length * share)] = -100
            timed(input_ids, labels, True), timed(input_ids, labels, False)   # warm both
            tail_s, full_s, loss_gap = [], [], 0.0
            for _ in range(args.pairs):
                (a, full_loss), (b, tail_loss) = timed(input_ids, labels, False), timed(input_ids, labels, True)
                full_s.append(a)
                tail_s.append(b)
                loss_gap = max(loss_gap, abs(full_loss - tail_loss))
            ratio = statistics.median(a / b for a, b in zip(full_s, tail_s))
            print(f"{length} tokens, {share:.0%} trained: every query {1000 * statistics.median(full_s):.1f} ms, "
                  f"last layer's tail {1000 * statistics.median(tail_s):.1f} ms a step; every/tail {ratio:.2f}x "
                  f"(median of {args.pairs} pairs); largest loss difference {loss_gap:.2e}")


if __name__ == "__main__":
    main()
