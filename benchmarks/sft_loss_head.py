"""One SFT step (forward, backward) with TRL's CPU LM head and with craft's (runtime.train.loss_head).

Builds the ads recipe's default tiny_moe (or loads MODEL_DIR) and times, pair by pair, a step on one
sequence of LENGTH tokens whose last TRAINED share is trained (the rest masked, as a
prompt is), with TRL's fused head (every position projected) and with craft's (only the
trained positions). Prints each head's median ms per step, the median of the pairwise
ratios, and the largest difference of the two losses.

Run: .venv/bin/python benchmarks/sft_loss_head.py [--model MODEL_DIR] [--pairs 10]
     [--shape 800:0.25 --shape 5000:0.06]
The default shapes are a warm-up example (about 800 tokens, a quarter trained) and a
stuffed one (about 5,000 tokens, a few hundred trained).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


# The ads recipe's default profile: `model tiny_moe { ... }` in recipes/ads_analytics.craft.
ADS_DEFAULT = {"hidden": 128, "layers": 3, "heads": 4, "kv_heads": 2, "experts": 4, "top_k": 2,
               "intermediate": 256, "vocab": 4096, "context": 8192}


def build_default_tiny_moe(out_dir: str, **sizes: int) -> str:
    """The ads default's tiny_moe (``sizes`` override its spec's), its tokenizer trained on made-up
    words (enough for 4,096 pieces)."""
    import random

    from runtime.train.tiny_moe import build_tiny_moe

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 12)))
             for _ in range(20000)]
    corpus = [" ".join(words[i:i + 50]) for i in range(0, len(words), 50)]
    return str(build_tiny_moe(out_dir, corpus, {**ADS_DEFAULT, **sizes}))


def load(model_dir: str, craft_head: bool):
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    from runtime.train.loss_head import score_trained_positions

    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    model.train()
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))   # as SFTTrainer does
    if craft_head:
        score_trained_positions(model)
    return model


def step(model, input_ids, labels) -> tuple[float, float]:
    started = time.perf_counter()
    outputs = model(input_ids=input_ids, labels=labels, fused_lm_head=True)
    loss = -outputs.log_probs.sum() / outputs.label_mask.sum()
    loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - started, float(loss.detach())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model dir (default: build the default tiny_moe)")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--shape", action="append", help="LENGTH:TRAINED_SHARE, e.g. 800:0.25")
    args = parser.parse_args()

    import torch

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or build_default_tiny_moe(tmp)
        trl_model, craft_model = load(model_dir, False), load(model_dir, True)
        vocab = trl_model.config.vocab_size
        print(f"model: {type(trl_model).__name__}, {sum(p.numel() for p in trl_model.parameters()):,} "
              f"parameters, vocab {vocab}, {torch.get_num_threads()} threads")
        for shape in args.shape or ["800:0.25", "5000:0.06"]:
            length, share = int(shape.split(":")[0]), float(shape.split(":")[1])
            input_ids = torch.randint(0, vocab, (1, length))
            labels = input_ids.clone()
            labels[:, : length - int(length * share)] = -100
            step(trl_model, input_ids, labels), step(craft_model, input_ids, labels)   # warm both
            trl_s, craft_s, loss_gap = [], [], 0.0
            for _ in range(args.pairs):
                (a, trl_loss), (b, craft_loss) = step(trl_model, input_ids, labels), step(craft_model, input_ids, labels)
                trl_s.append(a)
                craft_s.append(b)
                loss_gap = max(loss_gap, abs(trl_loss - craft_loss))
            ratio = statistics.median(a / b for a, b in zip(trl_s, craft_s))
            print(f"{length} tokens, {share:.0%} trained: TRL head {1000 * statistics.median(trl_s):.1f} ms, "
                  f"craft head {1000 * statistics.median(craft_s):.1f} ms a step; TRL/craft {ratio:.2f}x "
                  f"(median of {args.pairs} pairs); largest loss difference {loss_gap:.2e}")


if __name__ == "__main__":
    main()
