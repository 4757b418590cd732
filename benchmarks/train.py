"""SFT throughput: craft's `train_sft` against a plain TRL `SFTTrainer` script.

Both train the same freshly built tiny_moe on the same conversations with the same
settings (CPU, float32, assistant-only loss). Tokens are TRL's own `num_tokens` count
(non-pad input tokens seen). Two figures per run:

- end to end: `time.perf_counter` around the whole call, so craft's own work (the
  mask report, metrics, loss plot, summary) counts against it;
- training loop: the trainer's own `train_runtime` for both.

The two paths alternate (A B A B ...), each round starts from the same saved weights,
and the ratio printed is the median of the per-round ratios (the machine may be shared).

Usage:
    python benchmarks/train.py [--steps 60] [--batch 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SYSTEM = "You are a data agent. Answer with <THINK>, <PLAN> and <CODE> blocks, then <ANSWER>."


def conversations(n: int) -> list[dict]:
    """Templated ads-analytics conversations with tool outputs (ids, timestamps)."""
    rows = []
    for i in range(n):
        k, days = 3 + i % 5, (7, 14, 30)[i % 3]
        code = f"result = api.query('select campaign_id, ctr from campaign_ctr where day >= today() - {days}')"
        table = "\n".join(f"{1000 + i + r}  2024-03-{r + 1:02d}T10:00:00Z  {0.01 * r:.3f}" for r in range(k))
        rows.append({"messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Which {k} campaigns had the best CTR in the last {days} days?"},
            {"role": "assistant", "content": f"<THINK>Rank by ctr.</THINK><PLAN>Last {days} days of DailyStat, "
                                             f"ctr per campaign, top {k}.</PLAN><CODE>{code}</CODE>"},
            {"role": "tool", "content": f"campaign_id  day  ctr\n{table}"},
            {"role": "assistant", "content": f"<ANSWER>The top {k} campaigns are above.</ANSWER>"},
        ]})
    return rows


def plain_trl(model_dir: Path, dataset_dir: Path, out: Path, steps: int, batch: int) -> tuple[int, float]:
    """The baseline: what a user would write by hand with TRL."""
    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    start = time.perf_counter()
    args = SFTConfig(output_dir=str(out), max_steps=steps, per_device_train_batch_size=batch, learning_rate=3e-4,
                     max_length=1024, logging_steps=1, save_strategy="no", assistant_only_loss=True,
                     use_cpu=True, bf16=False, activation_checkpointing=False, report_to="none",
                     disable_tqdm=True, seed=0)
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir), args=args,
                         processing_class=AutoTokenizer.from_pretrained(model_dir),
                         train_dataset=load_from_disk(str(dataset_dir)))
    result = trainer.train()
    trainer.save_model(str(out / "final"))
    wall = time.perf_counter() - start
    return int(max(e.get("num_tokens", 0) for e in trainer.state.log_history)), wall, result.metrics["train_runtime"]


def craft_sft(model_dir: Path, dataset_dir: Path, out: Path, steps: int, batch: int) -> tuple[int, float]:
    from runtime.train.masking import ASSISTANT_ONLY
    from runtime.train.sft import train_sft

    start = time.perf_counter()
    # The keys `craftc compile` writes into a CPU stage's trl_config.json, at the plain script's values.
    trl_kwargs = {"max_steps": steps, "per_device_train_batch_size": batch, "learning_rate": 3e-4,
                  "max_length": 1024, "logging_steps": 1, "save_strategy": "steps", "save_steps": 10 * steps,
                  "seed": 0, "use_cpu": True, "bf16": False, "activation_checkpointing": False,
                  "report_to": "none", "disable_tqdm": True, "dataloader_num_workers": 0}
    summary = train_sft(model_dir, dataset_dir, out, trl_kwargs, ASSISTANT_ONLY)
    return summary["num_tokens"], time.perf_counter() - start, summary["train_runtime_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    ns = parser.parse_args()

    import torch
    from datasets import Dataset

    from runtime.train.tiny_moe import build_tiny_moe

    torch.manual_seed(0)
    rows = conversations(256)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model_dir = build_tiny_moe(root / "model", [m["content"] for r in rows for m in r["messages"]], {})
        Dataset.from_list(rows).save_to_disk(str(root / "data"))
        n_params = sum(p.numel() for p in __import__("transformers").AutoModelForCausalLM
                       .from_pretrained(model_dir).parameters())
        print(f"model: tiny_moe default spec, {n_params / 1e6:.1f}M params; {ns.steps} steps x batch {ns.batch}; "
              f"torch threads {torch.get_num_threads()}")
        # A 2-step warm-up of each pays the one-off import and kernel costs; then the two
        # paths alternate, so neither gains from running second.
        runs = (("plain", plain_trl), ("craft", craft_sft))
        for name, fn in runs:
            fn(model_dir, root / "data", root / f"warm-{name}", 2, ns.batch)
        ratios = {"end to end": [], "training loop": []}
        for round_ in range(ns.rounds):
            rates = {}
            for name, fn in runs:
                tokens, wall, loop = fn(model_dir, root / "data", root / f"{name}-{round_}", ns.steps, ns.batch)
                rates[name] = (tokens / wall, tokens / loop)
                print(f"round {round_}  {name:5s} {tokens:8d} tokens  end to end {wall:6.2f} s = {tokens / wall:7.1f} "
                      f"tokens/s  training loop {loop:6.2f} s = {tokens / loop:7.1f} tokens/s")
            ratios["end to end"].append(rates["craft"][0] / rates["plain"][0])
            ratios["training loop"].append(rates["craft"][1] / rates["plain"][1])
        for what, values in ratios.items():
            print(f"craft/plain tokens/s, {what:13s}: median {statistics.median(values):.3f}  "
                  f"(rounds: {', '.join(f'{v:.3f}' for v in values)})")


if __name__ == "__main__":
    main()
