"""The eval step with its arms one after another, against `eval { processes N }`: same plan, same models.

Runs the eval step of a finished run (RUN_DIR holds every step up to grpo) into temporary
staging dirs, once with the plan's `eval { processes }` at 1 and once at N (the plan is
changed in memory only; nothing in RUN_DIR is written), alternating which goes first over
the rounds. It prints each eval's wall time, each arm's agent score both ways, and how
many model calls differ between the two (their text and code; how long the code ran and
the object addresses its output printed aside): a one-process eval decodes with every
core, the processes in MKL's strict mode on their share, so greedy decoding may pick
another token where two logits are within float rounding.

Run: .venv/bin/python benchmarks/eval_processes.py PLAN_DIR RUN_DIR [--processes 2] [--rounds 1]
e.g. after `make run`: benchmarks/eval_processes.py build/ads_analytics runs/ads_analytics.
The step's own lines go to stderr, the eval processes' (each starting with `[arms]`) and the
figures to stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed_eval(plan, plan_dir: Path, run_dir: Path, processes: int, out_dir: Path) -> float:
    """Seconds the eval step takes with `eval { processes }` set to ``processes``, its output in ``out_dir``."""
    from rich.console import Console

    from runtime.eval.step import run_eval
    from runtime.step_context import StepContext

    recipe = plan.recipe.model_copy(update={"eval": plan.recipe.eval.model_copy(update={"processes": processes})})
    ctx = StepContext(plan=plan.model_copy(update={"recipe": recipe}), plan_dir=plan_dir, run_dir=run_dir,
                      out_dir=out_dir, console=Console(stderr=True, soft_wrap=True), seed=plan.recipe.seed)
    started = time.perf_counter()
    run_eval(ctx)
    return time.perf_counter() - started


def calls(out_dir: Path) -> dict[str, list[str]]:
    """Each arm's model calls in order, as JSON, without what differs between any two runs."""
    from runtime.eval.arm_files import without_run_to_run

    out = {}
    for path in sorted((out_dir / "episodes").glob("*.jsonl")):
        episodes = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        texts = []
        for episode in episodes:
            for turn in episode["turns"]:
                for call in turn["calls"]:
                    texts.append(without_run_to_run(json.dumps(call, sort_keys=True)))
        out[path.stem] = texts
    return out


def agent_scores(out_dir: Path) -> dict[str, float]:
    report = json.loads((out_dir / "eval.json").read_text())
    return {arm: r["all"]["agent_score"]["value"] for arm, r in report["results"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan_dir", type=Path)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    from runtime.plan import load_plan

    plan = load_plan(args.plan_dir)
    arms = ", ".join(plan.recipe.eval.arms)
    print(f"eval of {args.run_dir} ({arms}; {len(plan.recipe.eval.arms)} arms), one process against "
          f"{args.processes}, {args.rounds} round(s)")
    seconds: dict[int, list[float]] = {1: [], args.processes: []}
    with tempfile.TemporaryDirectory(prefix="craft-eval-processes-") as tmp:
        for round_ in range(args.rounds):
            order = (args.processes, 1) if round_ % 2 == 0 else (1, args.processes)
            outs = {}
            for n in order:
                outs[n] = Path(tmp) / f"round{round_}-processes{n}"
                outs[n].mkdir()
                seconds[n].append(timed_eval(plan, args.plan_dir, args.run_dir, n, outs[n]))
                print(f"round {round_ + 1}: processes {n}: {seconds[n][-1]:.1f} s", flush=True)
            by_one, by_many = calls(outs[1]), calls(outs[args.processes])
            for arm in by_one:
                differ = (sum(a != b for a, b in zip(by_one[arm], by_many[arm]))
                          + abs(len(by_one[arm]) - len(by_many[arm])))
                print(f"round {round_ + 1}: {arm}: agent score {100 * agent_scores(outs[1])[arm]:.1f}% with one "
                      f"process, {100 * agent_scores(outs[args.processes])[arm]:.1f}% with {args.processes}; "
                      f"{differ} of {max(len(by_one[arm]), len(by_many[arm]))} calls differ", flush=True)
    one, many = statistics.median(seconds[1]), statistics.median(seconds[args.processes])
    print(f"median: processes 1 {one:.1f} s, processes {args.processes} {many:.1f} s: {one / many:.2f}x")


if __name__ == "__main__":
    main()
