"""Benchmark the world: generation rows/s at two scales and logical query latency.

For each scale it prints the generation rate, the latency of a few sample queries and
the latency of every reference solution of the ads recipe (one sampled instance per
workflow, every turn, best of 3), with the median and the slowest.

Usage: ``python benchmarks/world.py [--scales 1 40] [--seed 7]``. Scale 40 gives about
1.2M daily stat rows; scale 334 about 10M.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from craftc.emit.binding_sql import binding_sql  # noqa: E402
from craftc.frontend import load_recipe, load_schema  # noqa: E402
import duckdb  # noqa: E402

from runtime.world.api import WarehouseApi, connect  # noqa: E402
from runtime.world.generate import generate_warehouse  # noqa: E402
from runtime.workflows.instances import make_instances  # noqa: E402
from runtime.workflows.solutions import execute_code  # noqa: E402

SAMPLE_QUERIES = {
    "top_ctr_campaigns": """
        SELECT c.name, sum(s.clicks) / sum(s.impressions) AS ctr FROM daily_stat s
        JOIN ad a ON a.id = s.ad_id JOIN ad_group g ON g.id = a.ad_group_id JOIN campaign c ON c.id = g.campaign_id
        WHERE s.date >= DATE '2024-06-01' GROUP BY c.name ORDER BY ctr DESC LIMIT 10""",
    "spend_by_advertiser_week": """
        SELECT v.name, date_trunc('week', s.date) AS week, sum(s.cost) AS spend FROM daily_stat s
        JOIN ad a ON a.id = s.ad_id JOIN ad_group g ON g.id = a.ad_group_id JOIN campaign c ON c.id = g.campaign_id
        JOIN advertiser v ON v.id = c.advertiser_id GROUP BY ALL ORDER BY week, spend DESC""",
    "conversion_lag": """
        SELECT date_diff('day', k.clicked_at::DATE, c.converted_at::DATE) AS lag_days, count(*) AS n
        FROM conversion c JOIN click k ON k.id = c.click_id GROUP BY lag_days ORDER BY lag_days""",
    "device_roas": """
        SELECT d.device_type, sum(s.conversion_value) / sum(s.cost) AS roas FROM daily_stat s
        JOIN device d ON d.id = s.device_id GROUP BY d.device_type ORDER BY roas DESC""",
}


def bench_solutions(path: Path, seed: int) -> None:
    """Latency of every reference solution turn, on one sampled instance per workflow."""
    load = load_recipe(ROOT / "recipes" / "ads_analytics.craft")
    con = duckdb.connect(str(path), read_only=True)
    api = WarehouseApi(con)
    instances = make_instances(load.recipe, con, seed=seed, per_workflow=1,
                               solution_sources=load.solution_sources)
    timings = []
    for instance in instances:
        for n, turn in enumerate(instance.turns, 1):
            runs = []
            for _ in range(3):
                t = time.perf_counter()
                execute_code(turn.code, api, instance.params)
                runs.append(time.perf_counter() - t)
            timings.append((min(runs), f"{instance.workflow}/{n}"))
    timings.sort()
    median = timings[len(timings) // 2][0]
    print(f"  reference solutions: {len(timings)} turns, median {median * 1000:.1f} ms, "
          f"slowest {timings[-1][0] * 1000:.1f} ms ({timings[-1][1]}), total {sum(t for t, _ in timings):.2f} s")


def bench_scale(schema, scale: float, seed: int, workdir: Path) -> None:
    path = workdir / f"warehouse_{scale:g}.duckdb"
    started = time.perf_counter()
    counts = generate_warehouse(schema, path, seed=seed, scale=scale, binding_sql=binding_sql(schema))
    seconds = time.perf_counter() - started
    total = sum(counts.values())
    print(f"scale {scale:g}: {counts['DailyStat']:,} daily stat rows, {total:,} rows in all, "
          f"{seconds:.2f} s, {total / seconds:,.0f} rows/s, {path.stat().st_size / 2**20:.1f} MiB")
    api = connect(path)
    for name, sql in SAMPLE_QUERIES.items():
        api.query(sql)                        # warm
        runs = []
        for _ in range(3):
            t = time.perf_counter()
            api.query(sql)
            runs.append(time.perf_counter() - t)
        print(f"  query {name:28s} {min(runs) * 1000:8.1f} ms (best of 3)")
    bench_solutions(path, seed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 40.0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    schema = load_schema(ROOT / "schema_specs" / "ads.craft").schema
    with tempfile.TemporaryDirectory() as workdir:
        for scale in args.scales:
            bench_scale(schema, scale, args.seed, Path(workdir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
