"""Eval decoding of the pretrained profile's model, this tree against an earlier one, same prompts.

Loads SmolLM2-135M-Instruct as craft does (the sft step's gguf conversion, then the eval
step's float32 load), builds eval's first calls (an arm's system prompt from a compiled
plan and held-out questions: a run's instances when RUN_DIR is given, else each workflow's
first question with its params filled in) and decodes them greedily in one eval batch,
once with the eval generator of an earlier commit (BEFORE, `main` by default) and once with
this tree's, in alternating rounds (before-after, then after-before, ...). Each side is a
worker process holding its own copy of the model, its code imported from its own tree, so
both decode the same inputs in the same process state. It prints each round's wall time,
each side's median calls/s and generated tokens/s, and whether the greedy completions are
token for token the same.

Run: .venv/bin/python benchmarks/pretrained_decoding.py PLAN_DIR [--run-dir RUN_DIR]
     [--model-dir DIR] [--prompts 8] [--new-tokens 128] [--rounds 3] [--before main] [--arm craft]
     [--threads N]
e.g. `craftc compile recipes/ads_analytics.craft -o /tmp/plan --profile pretrained`, then
this with /tmp/plan. Without --model-dir the plan's gguf model is converted once into
/tmp/craft_pretrained_decoding (RUN_DIR/sft/base, or an arm's sft/<arm>/final, also serve).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# ---- the worker: one tree's eval generator, driven over stdin/stdout ------------------------

def worker(tree: str, model_dir: str) -> None:
    """Load the model as eval does and answer each request line with one timed generate call."""
    sys.path.insert(0, tree)
    import torch
    from transformers import AutoTokenizer

    from runtime.eval import step

    if int(sys.argv[7]):
        torch.set_num_threads(int(sys.argv[7]))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if hasattr(step, "eval_generator"):          # this tree: the eval step's own construction
        generate = step.eval_generator(model_dir, tokenizer, max_new_tokens=int(sys.argv[4]),
                                       batch_size=int(sys.argv[5]), copy_bias=float(sys.argv[6]))
    else:                                        # older trees built it inline, so
        from transformers import AutoModelForCausalLM

        from runtime.agent import HFGenerator

        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        generate = HFGenerator(model, tokenizer, max_new_tokens=int(sys.argv[4]), batch_size=int(sys.argv[5]),
                               frozen=True, copy_bias=float(sys.argv[6]))
    print(json.dumps({"threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        conversations = json.loads(line)
        started = time.perf_counter()
        out = generate(conversations)
        wall = time.perf_counter() - started
        print(json.dumps({"wall": wall, "completions": [g.completion_ids for g in out]}), flush=True)


class Side:
    """A worker process for one tree."""

    def __init__(self, name: str, tree: Path, model_dir: Path, new_tokens: int, batch: int, copy_bias: float,
                 threads: int):
        self.name, self.walls, self.tokens = name, [], []
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(tree), str(model_dir), str(new_tokens), str(batch),
             str(copy_bias), str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(tree))
        self.threads = json.loads(self.proc.stdout.readline())["threads"]

    def run(self, conversations: list) -> dict:
        self.proc.stdin.write(json.dumps(conversations) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


# ---- inputs ---------------------------------------------------------------------------------

def exported_tree(ref: str, into: Path) -> Path:
    """``runtime/`` and ``craftc/`` as they are at ``ref`` (git archive), under ``into``."""
    data = subprocess.run(["git", "archive", ref, "runtime", "craftc"], cwd=ROOT, check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into


def model_dir_of(plan, given: Path | None) -> Path:
    """``given``, or the plan's gguf model converted as the sft step converts it (once)."""
    if given is not None:
        return given
    from runtime.train.pretrained import convert_gguf, resolve_gguf

    spec = next(m for m in plan.recipe.models if m.source == "gguf")
    out = Path(tempfile.gettempdir()) / "craft_pretrained_decoding"
    if not (out / "config.json").is_file():
        convert_gguf(resolve_gguf(spec.path or spec.name), out)
    return out


def filled_ask(workflow) -> str:
    """A workflow's first question with its params filled in plausibly (no run dir to draw from)."""
    values = {}
    for param in workflow.params:
        if param.kind == "choice" and param.values:
            values[param.name] = param.values[0]
        elif param.kind == "range":
            values[param.name] = int(param.low) if param.integer else param.low
        else:
            values[param.name] = f"Acme {param.name.replace('_', ' ').title()}"
    return workflow.turns[0].asks[0].format(**values)


def questions(plan, run_dir: Path | None, count: int) -> list[str]:
    """First questions of held-out instances (the eval split's) or, with no run, of the plan's workflows."""
    if run_dir is not None:
        data = json.loads((run_dir / "dataset/dataset/eval_instances.json").read_text())
        chosen = [d for d in data if d.get("split") == plan.recipe.eval.split] or data
        return [d["turns"][0]["ask"] for d in chosen[:count]]
    return [filled_ask(w) for w in plan.recipe.workflows[:count]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan_dir", type=Path)
    parser.add_argument("--run-dir", type=Path)
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="main")
    parser.add_argument("--arm", default="craft")
    parser.add_argument("--threads", type=int, default=0, help="torch threads in both workers (0: torch's default)")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from runtime.plan import load_plan

    plan = load_plan(args.plan_dir)
    builder = json.loads((args.plan_dir / "specs/input_builder.json").read_text())
    system = (args.plan_dir / builder["modes"][builder["eval_arms"][args.arm]]["system_prompt"]).read_text()
    batch = [[{"role": "system", "content": system}, {"role": "user", "content": q}]
             for q in questions(plan, args.run_dir, args.prompts)]
    model_dir = model_dir_of(plan, args.model_dir)
    settings = (args.new_tokens, len(batch), plan.recipe.eval.copy_bias, args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        before = Side(f"before ({args.before})", exported_tree(args.before, Path(tmp)), model_dir, *settings)
        after = Side("after (this tree)", ROOT, model_dir, *settings)
        print(f"model {model_dir}, arm {args.arm}, {len(batch)} prompts in one batch, up to {args.new_tokens} "
              f"new tokens, {after.threads} threads")
        for side in (before, after):          # warm-up: first forward, the kept system prompt prefix
            print(f"  first call, one prompt (builds the kept system prompt's cache), {side.name}: "
                  f"{side.run(batch[:1])['wall']:.2f} s")
        same = None
        for round_ in range(args.rounds):
            order = (before, after) if round_ % 2 == 0 else (after, before)
            got = {}
            for side in order:
                got[side.name] = side.run(batch)
                side.walls.append(got[side.name]["wall"])
                side.tokens.append(sum(len(c) for c in got[side.name]["completions"]))
            rows = zip(got[before.name]["completions"], got[after.name]["completions"])
            same_now = sum(a == b for a, b in rows)
            same = same_now if same is None else min(same, same_now)
            print(f"  round {round_ + 1}: " + ", ".join(f"{s.name} {s.walls[-1]:.2f} s" for s in order))
        for side in (before, after):
            wall = statistics.median(side.walls)
            print(f"  {side.name:22s}: {len(batch) / wall:6.3f} calls/s, {statistics.median(side.tokens) / wall:7.1f} "
                  f"generated tokens/s (median of {args.rounds} rounds, {wall:.2f} s a batch)")
            side.close()
        print(f"  speed-up {statistics.median(before.walls) / statistics.median(after.walls):.2f}x; "
              f"identical greedy completions: {same} of {len(batch)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
