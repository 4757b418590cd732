"""`jobs_per_process` > 1: a job process serves several jobs in turn.

Faster (no fork, no cold pages per job) and weaker: each job still runs behind every
kernel layer, and craft puts back what it can (builtins, sys.modules, the random
generators, the temp dir, descriptors, the API object) and ends the process after any
job that did not end cleanly; but a change to a module attribute reaches the next job.
So reuse is for trusted code (a teacher's candidates), never for policy rollouts.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from runtime.sandbox import SandboxError, SandboxLimits, SandboxPool
from sandbox_support import TEST_LIMITS, assert_no_host_secret, pool_under_host_secrets, sha256

from test_hostile_code import ATTACKS, ENVIRONMENT_ATTACKS


@pytest.fixture(scope="module")
def reuse_pool(warehouse):
    with SandboxPool(1, warehouse, replace(TEST_LIMITS, jobs_per_process=4), "fake_api:make_api") as pool:
        yield pool


def _fresh_flags(runs) -> list[bool]:
    return [run.layers["fresh_process"] for run in runs]


def test_a_process_serves_up_to_jobs_per_process_jobs(reuse_pool):
    runs = reuse_pool.run_many(["result = 1"] * 9)
    assert all(run.ok for run in runs)
    # Each run says whether it had a process of its own; the pattern is fixed by the count.
    flags = _fresh_flags(runs)
    first = flags.index(True)
    assert flags[first:first + 5] == [True, False, False, False, True]
    assert all(run.timings["fork"] == 0 for run, fresh in zip(runs, flags) if not fresh)


def test_what_a_job_leaves_behind_is_put_back_before_the_next(reuse_pool):
    _start_fresh(reuse_pool)
    messy = """
import builtins, sys, random, numpy
open('left.txt', 'w').write('x')
kept_open = open('open.txt', 'w')
random.random(); numpy.random.random()
api.marker = 'left behind'
import os, warnings
os.environ['LEFT'] = '1'
sys.path.insert(0, '.')
warnings.simplefilter('error')
numpy.seterr(all='raise')
pd.set_option('display.max_rows', 3)
sys.modules['json'] = None
builtins.len = lambda x: -1
result = 1
"""
    check = """
import os, sys, json, random, numpy, warnings
result = {'files': len(os.listdir('.')), 'len': len([1, 2]), 'json': json.dumps([1]),
          'marker': hasattr(api, 'marker'), 'random': random.random(), 'numpy': float(numpy.random.random()),
          'env': 'LEFT' in os.environ, 'path': '.' in sys.path, 'warnings': len(warnings.filters),
          'divide': numpy.geterr()['divide'], 'rows': pd.get_option('display.max_rows')}
"""
    first, second = reuse_pool.run(messy), reuse_pool.run(check)
    assert first.ok and second.ok and not second.layers["fresh_process"]
    in_a_fresh_process = _start_fresh(reuse_pool, check).result_frame.to_dict("records")[0]
    reused = second.result_frame.to_dict("records")[0]
    # numpy starts where a fresh fork starts; `random` reseeds itself in a fresh fork, and so here.
    assert reused["numpy"] == in_a_fresh_process["numpy"] and reused["random"] != in_a_fresh_process["random"]
    assert reused | {"random": 0} == in_a_fresh_process | {"random": 0}
    assert (reused["files"], reused["len"], reused["json"], reused["marker"], reused["env"], reused["path"]) == (
        0, 2, "[1]", False, False, False)


def test_a_temp_view_in_the_shared_session_ends_the_process(reuse_pool):
    # A temp view would shadow the warehouse table for every later job.
    _start_fresh(reuse_pool)
    shadow = reuse_pool.run("api._con.execute('CREATE TEMP VIEW campaigns AS SELECT 0 AS n').fetchall()\nresult = 1")
    after = reuse_pool.run("result = api.query('SELECT count(*) AS n FROM campaigns')")
    assert shadow.ok and after.layers["fresh_process"] and after.result_frame["n"].tolist() == [200]


@pytest.mark.parametrize("code, expected", [
    ("import socket\nsocket.socket()", "SecurityViolation"),
    ("print('x' * 200_000)", "OutputLimit"),
    ("import os\nos._exit(3)", "WorkerCrashed"),
])
def test_a_job_that_did_not_end_cleanly_ends_its_process(reuse_pool, code, expected):
    _start_fresh(reuse_pool)
    bad = reuse_pool.run(code)
    assert bad.error_class == expected and not bad.layers["fresh_process"]
    assert reuse_pool.run("result = 1").layers["fresh_process"]


def test_each_reused_job_gets_its_own_cpu_budget(warehouse):
    limits = replace(TEST_LIMITS, wall_timeout_s=30.0, jobs_per_process=4)
    with SandboxPool(1, warehouse, limits, "fake_api:make_api") as pool:
        spend = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.7:\n    pass\nresult = 1"
        runs = [pool.run(spend) for _ in range(3)]      # 2.1 s in all, 0.7 s each: under 1 s a job
        spin = pool.run("while True:\n    pass")
    assert all(run.ok for run in runs) and not any(_fresh_flags(runs[1:]))
    # Stopped by its own budget, not by the 30 s wall clock (which on its own could also read as CpuLimit).
    assert spin.error_class == "CpuLimit" and not spin.layers["fresh_process"] and spin.wall_s < limits.wall_timeout_s


def test_module_patches_do_reach_the_next_job_in_the_same_process(reuse_pool):
    # The documented limit of reuse: this is why the default is a fresh process per job.
    _start_fresh(reuse_pool)
    reuse_pool.run("pd.DataFrame.craft_patched = True\nresult = 1")
    leaked = reuse_pool.run("result = getattr(pd.DataFrame, 'craft_patched', False)")
    assert not leaked.layers["fresh_process"] and leaked.result_frame["result"].tolist() == [True]


@pytest.mark.parametrize("code, expected", [a[1:] for a in ATTACKS if a[2] != "CpuLimit"],
                         ids=[a[0] for a in ATTACKS if a[2] != "CpuLimit"])
def test_attacks_are_contained_in_a_reused_process_too(reuse_pool, warehouse, warehouse_digest, code, expected):
    # CpuLimit attacks are above (per-job budget); here the attack always runs second.
    _start_fresh(reuse_pool)
    run = reuse_pool.run(code)
    assert (run.ok, run.error_class, run.layers["fresh_process"]) == (False, expected, False), run.error_message
    assert sha256(warehouse) == warehouse_digest
    follow_up = reuse_pool.run("result = api.query('SELECT count(*) AS n FROM campaigns')")
    assert follow_up.ok and follow_up.result_frame["n"].tolist() == [200]


@pytest.fixture(scope="module")
def reuse_secrets_pool(warehouse):
    with pool_under_host_secrets(warehouse, replace(TEST_LIMITS, jobs_per_process=4)) as pool:
        yield pool


@pytest.mark.parametrize("code, expected", [a[1:] for a in ENVIRONMENT_ATTACKS], ids=[a[0] for a in ENVIRONMENT_ATTACKS])
def test_the_host_environment_does_not_reach_a_reused_process_either(reuse_secrets_pool, code, expected):
    _start_fresh(reuse_secrets_pool, "import os\nos.environ['OPENAI_API_KEY'] = 'planted'\nresult = 1")
    run = reuse_secrets_pool.run(code)
    assert (run.error_class, run.layers["fresh_process"]) == (expected, False), run.error_message
    assert_no_host_secret(run)
    assert "planted" not in run.result_preview + run.stdout_tail  # the reset put the environment back


def test_jobs_per_process_must_be_a_whole_positive_number():
    for bad in (0, 2.5, True):
        with pytest.raises(SandboxError, match="jobs_per_process"):
            SandboxLimits(jobs_per_process=bad)


def _start_fresh(pool, code: str = "result = 1"):
    """Run jobs until one lands in a fresh process; the next job is then that process's second."""
    for _ in range(8):
        run = pool.run(code)
        if run.layers["fresh_process"]:
            return run
    raise AssertionError("no fresh process in 8 jobs")
