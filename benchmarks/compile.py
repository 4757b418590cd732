"""How long the ads recipe takes to compile, and how compile time grows with recipe size.

First the real ads recipe: `craftc compile` as a subprocess (interpreter start
included), one warm-up run (it fills craftc's caches, see craftc/cache.py: lark's
tables, the compiled templates, the syntax trees, what each solution reads) then the
median of RUNS runs into the same plan dir against the 0.3 s goal, with the median CPU
time (user + system) of those runs, which a busy machine inflates less than wall time,
and the interpreter's `-X importtime` total. A second line times RUNS compiles into a
new plan dir each (every file written; the runs above find the plan dir up to date
and write nothing). Then the scaling table:

Generates a schema and a recipe with N entities and N workflows (N = 25, 250, 2,500)
in a temporary directory and prints, for each, the wall time of `craftc compile` as a
subprocess (interpreter start included) and of compiling in-process, split into the
front end (load + check), emission (render) and writing the plan dir, plus the 2500/250 ratio (10x the input; ~10 means linear).

Run: .venv/bin/python benchmarks/compile.py [--ads-only]
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (25, 250, 2500)
ROOT = Path(__file__).resolve().parents[1]
ADS = ROOT / "recipes" / "ads_analytics.craft"
RUNS = 9
GOAL_S = 0.3

SOLUTION = '''"""Keep the ${n} rows with the largest amount."""
result = api.query("SELECT * FROM e0 ORDER BY amount DESC").head(${n})
'''


def schema_text(n: int) -> str:
    lines = ["schema bench version 1 {", '  doc "Generated for the compile benchmark"']
    for i in range(n):
        lines += [f"  entity E{i} {{", f'    doc "Entity number {i}"', f'    table "raw.t{i}"',
                  '    key id -> column "pk"']
        if i:
            lines.append(f'    ref parent -> E{i - 1} "the previous entity" -> column "parent_pk"')
        lines += ['    field name string "A name" -> column "nm"',
                  '    field amount money "An amount" -> column "amt_micros" scale 1e-6',
                  "    field kind enum(a, b, c)", "  }"]
    lines += ['  metric total "Sum of amounts" = sum(E0.amount)', "}"]
    return "\n".join(lines) + "\n"


def recipe_text(n: int) -> str:
    lines = ["recipe bench {", '  uses schema "schema.craft"', "  seed 1"]
    for i in range(n):
        lines += [f"  workflow w{i} {{", f'    ask "Top {{n}} rows of entity {i}?"', "    param n in 2..5",
                  f"    uses E{i}", '    solution "solutions/top.py"', "    expect same_rows ordered", "  }"]
    lines += ["  model tiny_moe { source tiny_moe  context 1000000 }",
              "  stage sft { base tiny_moe  epochs 1 }", "  stage grpo { from sft  steps 2 }",
              "  eval { baseline none  arms craft, sft_only }", "}"]
    return "\n".join(lines) + "\n"


def write_case(root: Path, n: int) -> Path:
    case = root / f"n{n}"
    (case / "solutions").mkdir(parents=True)
    (case / "schema.craft").write_text(schema_text(n))
    (case / "recipe.craft").write_text(recipe_text(n))
    (case / "solutions" / "top.py").write_text(SOLUTION)
    return case / "recipe.craft"


def timed_compile(recipe: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of `craftc compile` in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "craftc.cli", "compile", str(recipe), "-o", str(out)],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"compile failed for {recipe}:\n{done.stderr[-2000:]}")
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def time_subprocess(recipe: Path, out: Path) -> float:
    return timed_compile(recipe, out)[0]


def time_in_process(recipe: Path, out: Path) -> tuple[float, float, float]:
    """(front end: load + check, emission: render, write) seconds."""
    from craftc.emit.compile import _solution_sources
    from craftc.emit.plan import render_plan_files, write_plan_files
    from craftc.frontend import load_recipe

    start = time.perf_counter()
    loaded = load_recipe(recipe)
    if loaded.recipe is None:
        raise SystemExit(loaded.render())
    checked = time.perf_counter()
    files = render_plan_files(loaded.recipe, _solution_sources(loaded))
    rendered = time.perf_counter()
    write_plan_files(files, out)
    return checked - start, rendered - checked, time.perf_counter() - rendered


def ads_recipe(out: Path) -> None:
    """Median wall and CPU time of compiling the ads recipe in a fresh interpreter, and import time."""
    time_subprocess(ADS, out)                       # warm-up: fills the caches
    walls, cpus = zip(*(timed_compile(ADS, out) for _ in range(RUNS)))
    fresh_walls, fresh_cpus = zip(*(timed_compile(ADS, out.with_name(f"fresh{i}")) for i in range(RUNS)))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "craftc.cli", "compile", str(ADS),
                           "-o", str(out)], capture_output=True, text=True)
    imports_us = sum(int(line.split("|")[0].split(":")[1]) for line in done.stderr.splitlines()
                     if line.startswith("import time:") and line.split("|")[0].split(":")[1].strip().isdigit())
    median = statistics.median(walls)
    print(f"ads recipe: median {median:.3f} s over {RUNS} runs (min {min(walls):.3f}, max {max(walls):.3f}; "
          f"CPU median {statistics.median(cpus):.3f} s); goal {GOAL_S} s: {'met' if median < GOAL_S else 'missed'}; "
          f"-X importtime total {imports_us / 1e6:.3f} s")
    print(f"  into a new plan dir each run: median {statistics.median(fresh_walls):.3f} s "
          f"(CPU median {statistics.median(fresh_cpus):.3f} s)")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="craftc-bench-ads-") as tmp:
        ads_recipe(Path(tmp) / "plan")
    if "--ads-only" in sys.argv:
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="craftc-bench-") as tmp:
        root = Path(tmp)
        print(f"{'entities':>9} {'workflows':>9} {'subprocess s':>13} {'in-process s':>13} "
              f"{'load+check':>11} {'render':>8} {'write':>7} {'files':>6}")
        for n in SIZES:
            recipe = write_case(root, n)
            sub = time_subprocess(recipe, root / f"plan_sub_{n}")
            load, render, write = time_in_process(recipe, root / f"plan_in_{n}")
            inproc = load + render + write
            files = sum(1 for p in (root / f"plan_in_{n}").rglob("*") if p.is_file())
            results[n] = (sub, inproc)
            print(f"{n:>9} {n:>9} {sub:>13.3f} {inproc:>13.3f} {load:>11.3f} {render:>8.3f} {write:>7.3f} {files:>6}")
    print(f"ratio 2500/250: subprocess {results[2500][0] / results[250][0]:.2f}x, "
          f"in-process {results[2500][1] / results[250][1]:.2f}x")


if __name__ == "__main__":
    main()
