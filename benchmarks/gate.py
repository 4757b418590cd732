"""Gate throughput: candidates/s through gates 1 and 2 on the mini ads recipe, and the
cost of the sandbox against plain in-process execution of the same code.

Usage: .venv/bin/python benchmarks/gate.py [N_CANDIDATES]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "distill"))


def main(n: int = 400) -> None:
    import duckdb
    from rich.console import Console

    from conftest import FIXTURES, SEED, _run_step
    from craftc.emit.binding_sql import binding_sql
    from craftc.emit.compile import compile_to_dir
    from craftc.ir import Plan
    from runtime.distill.gates import sandbox_limits
    from runtime.distill.step import API_FACTORY, gate_candidates
    from runtime.sandbox import SandboxPool
    from runtime.world.api import WarehouseApi
    from runtime.world.generate import generate_warehouse
    from runtime.workflows import execute_code

    root = Path(tempfile.mkdtemp(prefix="gate-bench-"))
    plan_dir, run_dir = root / "plan", root / "run"
    compile_to_dir(FIXTURES / "mini_ads.craft", plan_dir)
    plan = Plan.model_validate_json((plan_dir / "plan.json").read_text())
    # Noise without endless loops: their timeout measures the gate's setting, not its speed.
    recipe = plan.recipe.model_copy(update={"teacher": plan.recipe.teacher.model_copy(update={"noise": 0.0})})
    plan = plan.model_copy(update={"recipe": recipe})
    (run_dir / "world").mkdir(parents=True)
    db = run_dir / "world" / "warehouse.duckdb"
    generate_warehouse(recipe.schema_, db, SEED, 1.0, binding_sql(recipe.schema_))
    (run_dir / "world" / "manifest.json").write_text("{}")
    _run_step(plan, plan_dir, run_dir, "distill")
    instances = json.loads((run_dir / "distill" / "instances.json").read_text())
    candidates = [json.loads(line) for line in (run_dir / "distill" / "candidates.jsonl").read_text().splitlines()]
    candidates = (candidates * (n // len(candidates) + 1))[:n]
    candidates = [{**c, "candidate_id": f"{c['candidate_id']}#{k}"} for k, c in enumerate(candidates)]
    gate_only = recipe.gates.model_copy(update={"order": ("execution", "output")})
    bench_recipe = recipe.model_copy(update={"gates": gate_only})
    with SandboxPool(2, db, sandbox_limits(recipe), API_FACTORY) as pool:
        gate_candidates(bench_recipe, instances, candidates[:8], pool)  # warm up
        started = time.monotonic()
        outcomes, _ = gate_candidates(bench_recipe, instances, candidates, pool)
        gated_s = time.monotonic() - started
        codes = [(c["text"].split("<CODE>")[1].split("</CODE>")[0], next(i for i in instances if i["instance_id"] == c["instance_id"])["params"]) for c in candidates[:100]]
        started = time.monotonic()
        pool.run_many(codes)
        sandbox_s = time.monotonic() - started
    api = WarehouseApi(duckdb.connect(str(db), read_only=True))
    started = time.monotonic()
    for code, params in codes:
        execute_code(code, api, params)
    plain_s = time.monotonic() - started
    figures = {"candidates": len(outcomes), "gate12_candidates_per_s": round(len(outcomes) / gated_s, 1),
               "sandbox_2_workers_s_per_100": round(sandbox_s, 2), "plain_1_process_s_per_100": round(plain_s, 2),
               "sandbox_over_plain": round(sandbox_s / plain_s, 2)}
    Console().print(figures)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
