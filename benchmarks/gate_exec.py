"""How fast the gate can execute candidates through the sandbox.

Runs N small, realistic query snippets (the shape the synthetic teacher emits)
through a SandboxPool using every core, then the same snippets with a plain
in-process exec over a connection with the sandbox's DuckDB settings (one
thread, read-only), and prints candidates/s for both and their ratio. Each figure
is taken REPEATS times (the machine may be shared) and shown as min / median; the
median job is split into steps from `ExecResult.timings`.

    python benchmarks/gate_exec.py [N] [WORKERS] [REPEATS]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402
import pandas as pd  # noqa: E402

from runtime.sandbox import SandboxLimits, SandboxPool  # noqa: E402


class BenchApi:
    """The shape of the warehouse API: SQL in, DataFrame out, calls recorded."""

    def __init__(self, con):
        self._con, self.calls = con, []

    def query(self, sql: str) -> pd.DataFrame:
        self.calls.append("query")
        return self._con.sql(sql).df()


SNIPPETS = [
    "result = api.query(f\"SELECT name, budget FROM campaigns WHERE advertiser_id = {params['adv']} ORDER BY budget DESC LIMIT 5\")",
    "df = api.query(f\"SELECT campaign_id, sum(clicks) AS clicks FROM daily_stats WHERE day >= DATE '2024-01-01' + {params['days']} GROUP BY 1\")\nresult = df.sort_values('clicks', ascending=False).head(10)",
    "c = api.query('SELECT id, advertiser_id FROM campaigns')\ns = api.query(f\"SELECT campaign_id, sum(cost) AS cost FROM daily_stats WHERE clicks > {params['min']} GROUP BY 1\")\nresult = c.merge(s, left_on='id', right_on='campaign_id').groupby('advertiser_id')['cost'].sum().reset_index()",
    "result = api.query(f\"SELECT count(*) AS n FROM daily_stats WHERE campaign_id = {params['cid']}\")['n'][0]",
    "df = api.query(f\"SELECT day, sum(clicks) AS clicks, sum(cost) AS cost FROM daily_stats WHERE campaign_id < {params['cid']} GROUP BY day ORDER BY day\")\ndf['cpc'] = df['cost'] / df['clicks'].clip(lower=1)\nresult = df.tail(7)",
]


def make_warehouse(directory: str) -> str:
    path = os.path.join(directory, "bench.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE campaigns AS SELECT range AS id, 'campaign ' || range AS name, range % 40 AS advertiser_id, "
                "(range * 7 % 1000)::DOUBLE AS budget FROM range(2000)")
    con.execute("CREATE TABLE daily_stats AS SELECT range % 2000 AS campaign_id, DATE '2024-01-01' + (range // 2000)::INT AS day, "
                "range % 97 AS clicks, (range % 89) * 0.1 AS cost FROM range(200000)")
    con.close()
    return path


def make_jobs(n: int) -> list[tuple[str, dict]]:
    return [(SNIPPETS[i % len(SNIPPETS)], {"adv": i % 40, "days": i % 90, "min": i % 50, "cid": i % 2000})
            for i in range(n)]


def run_plain(db_path: str, jobs, threads: int = 1) -> float:
    con = duckdb.connect(db_path, read_only=True, config={"threads": threads})
    started = time.perf_counter()
    for code, params in jobs:
        scope = {"api": BenchApi(con), "params": params, "pd": pd}
        exec(compile(code, "<agent>", "exec"), scope)
        assert "result" in scope
    elapsed = time.perf_counter() - started
    con.close()
    return elapsed


def spread(values) -> str:
    return f"min {min(values):7.2f}  median {statistics.median(values):7.2f}"


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else (os.cpu_count() or 2)
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with tempfile.TemporaryDirectory() as directory:
        db_path = make_warehouse(directory)
        jobs = make_jobs(n)
        run_plain(db_path, jobs[:20])  # warm caches, like the pool's warm-up
        started = time.perf_counter()
        # Warmed with the snippets, as the gate warms its workers with reference solutions.
        warmup = jobs[:len(SNIPPETS)]
        with SandboxPool(workers, db_path, SandboxLimits(), "gate_exec:BenchApi", warmup=warmup) as pool:
            start_s = time.perf_counter() - started
            pool.run_many(jobs[:20])
            plain, plain_2t, sandboxed, cpu_ms, runs = [], [], [], [], []
            for _ in range(repeats):  # interleaved, so a busy moment hits both sides
                plain.append(run_plain(db_path, jobs))
                plain_2t.append(run_plain(db_path, jobs, threads=2))
                started, cpu = time.perf_counter(), time.process_time()
                runs = pool.run_many(jobs)
                sandboxed.append(time.perf_counter() - started)
                host_cpu_s = time.process_time() - cpu
                cpu_ms.append(1000 * (sum(r.cpu_s for r in runs) + host_cpu_s) / n)
            single = [pool.run(code, params) for code, params in jobs[:50]]
        failed = [r for r in runs if not r.ok]
        ratios = [s / p for s, p in zip(sandboxed, plain)]
        print(f"candidates: {n}   workers: {workers}   cores: {os.cpu_count()}   repeats: {repeats}   load: {os.getloadavg()[0]:.1f}")
        print(f"pool start-up: {start_s:.2f} s")
        print(f"sandboxed, candidates/s ({workers} workers):      {spread([n / s for s in sandboxed])}")
        print(f"plain exec, candidates/s (1 process, threads=1):  {spread([n / s for s in plain])}")
        print(f"plain exec, candidates/s (1 process, threads=2):  {spread([n / s for s in plain_2t])}")
        print(f"ratio sandboxed/plain (time per candidate, threads=1 both): {spread(ratios)}")
        print(f"CPU per sandboxed candidate (job process + host), ms:       {spread(cpu_ms)}")
        print(f"CPU per plain candidate, ms:                                {spread([1000 * p / n for p in plain])}")
        steps = {}
        for run in single:
            for step, ms in run.timings.items():
                steps.setdefault(step, []).append(ms)
        print("one job at a time, median ms per step: " + "  ".join(f"{k}={statistics.median(v):.2f}" for k, v in steps.items()))
        print(f"failed candidates: {len(failed)}" + (f" (first: {failed[0].error_class}: {failed[0].error_message})" if failed else ""))


if __name__ == "__main__":
    main()
