"""What an equal-steps stuffed arm costs against the stripped arm, by model width.

The stuffed arm's examples are the stripped arm's with a ~4,700-token schema prompt in place
of the short system prompt. Packed so a batch runs that prompt once (`sampler by_prefix`),
each example's own tokens still attend to every prompt key: on a narrow model that
attention, not the weights, is most of a step, so the stuffed/stripped ratio at equal steps
stays well above the token ratio however the prompt is shared. On a wider model the weights'
work per token grows with the square of the width and the attention's only linearly, so the
ratio can fall toward the shared batch's token ratio; this measures how far it does.

For each width this builds the ads default's tiny_moe at that hidden size (head size 32,
intermediate twice the hidden size, the default's layers and experts), and times one
training step (forward with SFT's head, backward) of a stripped batch (short system prompt,
`--own` tokens each) and of a stuffed batch of the
same own tokens behind one `--prefix`-token prompt, both packed as `sampler by_prefix` packs
them (each batch's prompt once, no padding), in paired rounds. It prints each arm's seconds per step, the median of the per-round
stuffed/stripped ratios, and what `--steps` steps of each arm would take at those rates.

The defaults are the ads default's conversations (own ~780 tokens) at batch 8 on one thread
(`arms concurrent` gives each arm one of the two cores); `--own 290 --steps 616` are its
warm-up examples.

Run: .venv/bin/python benchmarks/stuffed_width.py [--hidden 128 256 512] [--batch 8] [--rounds 3]
     [--own 780] [--steps 308] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared_prefix_train import collate, load, step, synthetic_examples  # noqa: E402
from sft_loss_head import build_default_tiny_moe  # noqa: E402

STRIPPED_PROMPT = 75     # the ads default's stripped system prompt, in tokens (about)


def build_at_width(out_dir: str, hidden: int) -> str:
    """The ads default's tiny_moe at ``hidden``: head size 32, intermediate twice the hidden size."""
    heads = max(hidden // 32, 1)
    return build_default_tiny_moe(out_dir, hidden=hidden, intermediate=2 * hidden, heads=heads,
                                  kv_heads=max(heads // 2, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--batch", type=int, default=8, help="examples per step, both arms")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds per width")
    parser.add_argument("--prefix", type=int, default=4745, help="the stuffed arm's schema prompt, in tokens")
    parser.add_argument("--own", type=int, default=780, help="each example's own tokens, on average")
    parser.add_argument("--steps", type=int, default=308, help="steps per arm to project (the default's "
                        "conversations at batch 8)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (`arms concurrent`: one per arm)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"{args.threads} thread(s); batch {args.batch}; stripped: {STRIPPED_PROMPT}-token prompt + ~{args.own} "
          f"own tokens; stuffed: {args.prefix}-token prompt + the same own lengths; both packed (by_prefix)")
    for hidden in args.hidden:
        with tempfile.TemporaryDirectory() as tmp:
            model_dir = build_at_width(tmp, hidden)
            model = load(model_dir, True)
            vocab, pad = model.config.vocab_size, model.config.pad_token_id or 0
            stripped = collate(synthetic_examples(vocab, args.batch, STRIPPED_PROMPT, args.own), True, pad)
            stuffed = collate(synthetic_examples(vocab, args.batch, args.prefix, args.own), True, pad)
            step(model, stripped), step(model, stuffed)      # warm both
            stripped_s, stuffed_s = [], []
            for _ in range(args.rounds):
                stripped_s.append(step(model, stripped)[0])
                stuffed_s.append(step(model, stuffed)[0])
            ratio = statistics.median(b / a for a, b in zip(stripped_s, stuffed_s))
            a, b = statistics.median(stripped_s), statistics.median(stuffed_s)
            params = sum(p.numel() for p in model.parameters())
            print(f"hidden {hidden:4d} ({params / 1e6:.1f}M parameters): stripped {a:.2f} s/step, stuffed {b:.2f} "
                  f"s/step, stuffed/stripped {ratio:.2f}x (median of {args.rounds} paired rounds); {args.steps} "
                  f"steps: stripped {a * args.steps / 60:.1f} min, stuffed {b * args.steps / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
