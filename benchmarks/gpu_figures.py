"""The GPU check's figures, read from a finished run dir: what benchmarks/gpu_check.sh prints and keeps.

    python benchmarks/gpu_figures.py RUN_DIR OUT_DIR [--peak-log FILE] [--wall S] [--peak-tflops T]

Writes into OUT_DIR (at most 8 files, what a lent machine's runner brings back):
``figures.json`` (every number below), ``figures.md`` (the same as a table), ``sft_loss.png``
(both arms' loss), ``grpo_rewards.png`` (the mean reward per step) and ``report.md`` (the run's
report), and prints figures.md.

- tokens/s and steps/s: each SFT arm's trained tokens and optimizer steps over its train runtime;
  GRPO's steps over its wall time (rollouts, sandbox and measurements included).
- peak GPU memory: the largest `memory.used` that nvidia-smi sampled once a second (whole GPU).
- MFU: 6 x active parameters x tokens/s over the GPU's dense bf16 peak (989 TFLOP/s for an
  H100 or H200 SXM unless --peak-tflops says otherwise). Active parameters count the attention,
  the router, `num_experts_per_tok` of the experts and the LM head of each token's forward
  pass; the embedding lookup is no matmul. It is an estimate: attention's own FLOPs over the
  sequence and the recomputation of activation checkpointing are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SFT_SUMMARY = "sft_summary.json"


def active_parameters(config: dict) -> int | None:
    """Parameters one token's forward pass multiplies by (see the module docstring)."""
    try:
        h, layers, vocab = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]
        heads = config["num_attention_heads"]
        kv = config.get("num_key_value_heads") or heads
        head_dim = config.get("head_dim") or h // heads
    except (KeyError, TypeError, ZeroDivisionError):
        return None
    attention = h * heads * head_dim * 2 + h * kv * head_dim * 2
    experts = config.get("num_experts") or config.get("num_local_experts")
    if experts:
        inter = config.get("moe_intermediate_size") or config["intermediate_size"]
        mlp = config.get("num_experts_per_tok", 1) * 3 * h * inter + h * experts
    else:
        mlp = 3 * h * config["intermediate_size"]
    return layers * (attention + mlp) + h * vocab


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _peak_mib(log: Path | None) -> int | None:
    if log is None or not log.is_file():
        return None
    values = [int(x) for x in log.read_text().split() if x.strip().isdigit()]
    return max(values) if values else None


def figures(run: Path, peak_log: Path | None = None, wall: float | None = None,
            peak_tflops: float = 989.0) -> dict:
    out: dict = {"run_dir": str(run), "wall_s": wall, "peak_gpu_memory_mib": _peak_mib(peak_log), "sft": {}}
    config_path = next(iter(sorted(run.glob("sft/*/final/config.json"))), None)
    config = json.loads(config_path.read_text()) if config_path else {}
    active = active_parameters(config) if config else None
    out["model"] = {key: config.get(key) for key in ("model_type", "hidden_size", "num_hidden_layers", "num_experts", "num_local_experts",
                                                     "num_experts_per_tok", "vocab_size") if key in config}
    out["model"]["active_parameters"] = active
    for summary_path in sorted(run.glob(f"sft/*/{SFT_SUMMARY}")):
        arm = summary_path.parent.name
        s = json.loads(summary_path.read_text())
        runtime = s.get("train_runtime_s") or 0
        tps = s.get("tokens_per_s")
        out["sft"][arm] = {
            "steps": s.get("steps"), "tokens": s.get("num_tokens"), "tokens_per_s": tps,
            "steps_per_s": round(s["steps"] / runtime, 3) if runtime else None,
            "first_loss": s.get("first_loss"), "last_loss": s.get("last_loss"),
            "mfu": round(6 * active * tps / (peak_tflops * 1e12), 4) if active and tps else None,
            "loss": [e["loss"] for e in _jsonl(summary_path.parent / "metrics.jsonl") if "loss" in e],
        }
    grpo_path = run / "grpo" / "grpo_summary.json"
    if grpo_path.is_file():
        g = json.loads(grpo_path.read_text())
        history = _jsonl(run / "grpo" / "metrics.jsonl")
        rollouts = sum(g.get("rollouts_per_workflow", {}).values())
        out["grpo"] = {
            "steps": g.get("steps"), "wall_s": g.get("wall_s"), "rollouts": rollouts,
            "steps_per_s": round(g["steps"] / g["wall_s"], 4) if g.get("wall_s") else None,
            "rollouts_per_s": round(rollouts / g["wall_s"], 3) if g.get("wall_s") else None,
            "reward": [e["reward"] for e in history if "reward" in e],
            "before": g.get("before"), "after": g.get("after"),
        }
    out["report"] = (run / "report" / "report.md").is_file()
    return out


def _table(f: dict) -> str:
    rows = ["| what | value |", "| --- | --- |",
            f"| wall (compile + run) | {f['wall_s']} s |",
            f"| peak GPU memory (nvidia-smi, whole GPU) | {f['peak_gpu_memory_mib']} MiB |",
            f"| model | {f['model']} |"]
    for arm, s in f["sft"].items():
        rows.append(f"| sft {arm} | {s['steps']} steps, {s['tokens_per_s']} tokens/s, {s['steps_per_s']} steps/s, "
                    f"MFU {s['mfu']}, loss {s['first_loss']} -> {s['last_loss']} |")
    if "grpo" in f:
        g = f["grpo"]
        rows.append(f"| grpo | {g['steps']} steps in {g['wall_s']} s ({g['steps_per_s']} steps/s), {g['rollouts']} "
                    f"rollouts ({g['rollouts_per_s']}/s), reward per step {[round(r, 3) for r in g['reward']]} |")
    return "\n".join(rows) + "\n"


def _plots(f: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for arm, s in f["sft"].items():
        ax.plot(range(1, len(s["loss"]) + 1), s["loss"], label=arm)
    ax.set(xlabel="logged step", ylabel="loss", title="SFT loss")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "sft_loss.png", dpi=80)
    plt.close(fig)
    if f.get("grpo", {}).get("reward"):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(range(1, len(f["grpo"]["reward"]) + 1), f["grpo"]["reward"], marker="o")
        ax.set(xlabel="step", ylabel="mean reward", title="GRPO reward")
        fig.tight_layout()
        fig.savefig(out / "grpo_rewards.png", dpi=80)
        plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--peak-log", type=Path)
    p.add_argument("--wall", type=float)
    p.add_argument("--peak-tflops", type=float, default=989.0)
    a = p.parse_args(argv)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    f = figures(a.run_dir, a.peak_log, a.wall, a.peak_tflops)
    (a.out_dir / "figures.json").write_text(json.dumps(f, indent=2, sort_keys=True) + "\n")
    table = _table(f)
    (a.out_dir / "figures.md").write_text(table)
    _plots(f, a.out_dir)
    report = a.run_dir / "report" / "report.md"
    if report.is_file():
        (a.out_dir / "report.md").write_text(report.read_text())
    print(table)
    if not f["sft"] or "grpo" not in f or not f["report"]:
        print("gpu_figures: the run has no sft summary, grpo summary or report", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
