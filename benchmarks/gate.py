"""Gate throughput: candidates/s through gates 1 and 2 on the mini ads recipe, and the
cost of the sandbox against plain in-process execution of the same code.

Each figure is taken REPEATS times (the machine may be shared): min / median. The
plain side uses the sandbox's DuckDB settings (read-only, one thread). Reference
solutions run once per instance turn (`TriGate.run_references`), inside the timing. The
pool warms its workers with one reference solution per workflow turn, as the gate step
does; that start-up is printed separately.

JOBS_PER_PROCESS (default 1, a fresh process per candidate) sets the execution gate's
`jobs_per_process`: more lets one sandbox process run that many candidates in turn.

Usage: .venv/bin/python benchmarks/gate.py [N_CANDIDATES] [REPEATS] [WORKERS] [JOBS_PER_PROCESS]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "distill"))


def main(n: int = 400, repeats: int = 2, workers: int = 2, jobs_per_process: int = 1) -> None:
    import statistics

    import duckdb
    from rich.console import Console

    from distill_support import FIXTURES, SEED, _run_step
    from craftc.emit.binding_sql import binding_sql
    from craftc.emit.compile import compile_to_dir
    from craftc.ir import Plan
    from runtime.distill.gates import sandbox_limits
    from runtime.distill.step import gate_candidates
    from runtime.layout import API_FACTORY
    from runtime.sandbox import SandboxPool
    from runtime.world.api import WarehouseApi
    from runtime.world.generate import generate_warehouse
    from runtime.workflows import execute_code, warmup_jobs

    root = Path(tempfile.mkdtemp(prefix="gate-bench-"))
    plan_dir, run_dir = root / "plan", root / "run"
    compile_to_dir(FIXTURES / "mini_ads.craft", plan_dir)
    plan = Plan.model_validate_json((plan_dir / "plan.json").read_text())
    # Noise without endless loops: their timeout measures the gate's setting, not its speed.
    execution = plan.recipe.gates.execution.model_copy(update={"jobs_per_process": jobs_per_process})
    recipe = plan.recipe.model_copy(update={
        "teacher": plan.recipe.teacher.model_copy(update={"noise": 0.0}),
        "gates": plan.recipe.gates.model_copy(update={"execution": execution})})
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
    codes = [(c["text"].split("<CODE>")[1].split("</CODE>")[0],
              next(i for i in instances if i["instance_id"] == c["instance_id"])["params"]) for c in candidates[:100]]
    api = WarehouseApi(duckdb.connect(str(db), read_only=True, config={"threads": 1}))
    gated, sandboxed, plain = [], [], []
    started = time.perf_counter()
    with SandboxPool(workers, db, sandbox_limits(recipe), API_FACTORY, warmup=warmup_jobs(instances)) as pool:
        startup_s = time.perf_counter() - started
        huge_pages = pool.huge_pages
        gate_candidates(bench_recipe, instances, candidates[:8], pool)  # warm up
        for _ in range(repeats):
            started = time.perf_counter()
            outcomes, _ = gate_candidates(bench_recipe, instances, candidates, pool)
            gated.append(len(outcomes) / (time.perf_counter() - started))
            started = time.perf_counter()
            pool.run_many(codes)
            sandboxed.append(time.perf_counter() - started)
            started = time.perf_counter()
            for code, params in codes:
                execute_code(code, api, params)
            plain.append(time.perf_counter() - started)
    spread = lambda values: {"min": round(min(values), 2), "median": round(statistics.median(values), 2)}  # noqa: E731
    figures = {"candidates": len(outcomes), "instance_turns": len({(c["instance_id"], c["turn"]) for c in candidates}),
               "load": round(os.getloadavg()[0], 1), "pool_startup_s": round(startup_s, 2), "worker_huge_pages": huge_pages,
               "workers": workers, "jobs_per_process": jobs_per_process, "gate12_candidates_per_s": spread(gated), "sandbox_s_per_100": spread(sandboxed),
               "plain_1_process_threads1_s_per_100": spread(plain),
               "sandbox_over_plain": spread([s / p for s, p in zip(sandboxed, plain)])}
    Console().print(figures)


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:5]))
