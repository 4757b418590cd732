"""Hostile agent code: every attack is contained, named, and leaves no trace.

For each attack: the run fails with the expected error class, the warehouse file
is byte-identical, this (host) process is untouched, and the pool still serves a
good job afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import runtime.sandbox
from runtime.sandbox.limits import JOB_ENVIRONMENT
from sandbox_support import HOST_SECRETS, assert_no_host_secret, pool_under_host_secrets, sha256

DB_PATH = "api.query(\"SELECT path FROM duckdb_databases() WHERE NOT internal\")['path'][0]"

ATTACKS = [
    # network
    ("socket_to_localhost", "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)", "SecurityViolation"),
    ("socket_to_external_ip", "import socket\ns = socket.socket()\ns.connect(('8.8.8.8', 53))", "SecurityViolation"),
    ("dns_lookup", "import socket\nsocket.getaddrinfo('example.com', 80)", "SecurityViolation"),
    # the warehouse through its own connection
    ("sql_drop_table", "api.query('DROP TABLE campaigns')", "RuntimeError"),
    ("sql_insert", "api.query('INSERT INTO campaigns VALUES (999, \\'x\\', 0, 1.0)')", "RuntimeError"),
    ("sql_create_table", "api.query('CREATE TABLE evil AS SELECT 1')", "RuntimeError"),
    ("sql_attach_read_write", f"p = {DB_PATH}\napi.query(f\"ATTACH '{{p}}' AS rw (READ_WRITE)\")\n"
                              "api.query('CREATE TABLE rw.evil AS SELECT 1')", "RuntimeError"),
    ("sql_copy_to_file", "api.query(\"COPY campaigns TO '/tmp/leak.csv'\")", "RuntimeError"),
    ("sql_read_host_file", "result = api.query(\"SELECT * FROM read_csv('/etc/passwd')\")", "RuntimeError"),
    ("sql_unlock_configuration", "api.query('SET enable_external_access = true')", "RuntimeError"),
    ("sql_install_extension", "api.query('INSTALL httpfs')", "RuntimeError"),
    ("second_read_write_connection", f"import duckdb\nc = duckdb.connect({DB_PATH})\nc.execute('DROP TABLE campaigns')",
     "RuntimeError"),
    # files
    ("read_etc_passwd", "result = open('/etc/passwd').read()", "SecurityViolation"),
    ("read_warehouse_file", f"result = len(open({DB_PATH}, 'rb').read())", "SecurityViolation"),
    ("read_host_source", "result = open('/work/main/pyproject.toml').read()", "SecurityViolation"),
    ("list_host_dirs", "import os\nresult = os.listdir('/work')", "SecurityViolation"),
    ("write_outside_tmp", "open('/tmp/craft-sandbox-escape.txt', 'w').write('x')", "SecurityViolation"),
    ("write_warehouse_file", f"open({DB_PATH}, 'r+b').write(b'corrupt')", "SecurityViolation"),
    ("delete_outside_tmp", "import os\nos.remove('/tmp/anything')", "SecurityViolation"),
    ("symlink_out_of_tmp", "import os\nos.symlink('/etc', 'etc')\nresult = open('etc/passwd').read()", "SecurityViolation"),
    ("big_file_in_tmp", "open('big.bin', 'wb').write(b'x' * (8 << 20))", "OutputLimit"),
    # processes
    ("subprocess_run", "import subprocess\nsubprocess.run(['id'])", "SecurityViolation"),
    ("os_system", "import os\nos.system('id')", "SecurityViolation"),
    ("os_exec", "import os\nos.execv('/bin/sh', ['sh'])", "SecurityViolation"),
    ("fork_bomb", "import os\nwhile True:\n    os.fork()", "SecurityViolation"),
    # Python 3.11 has no audit event for threads: RLIMIT_NPROC refuses them in the kernel.
    ("thread_spawn", "import threading\nthreading.Thread(target=print).start()", "RuntimeError"),
    # resources
    ("memory_bomb_list", "x = [0] * (10 ** 9)", "MemoryLimit"),
    ("memory_bomb_bytes", "x = bytearray(4 << 30)", "MemoryLimit"),
    ("memory_bomb_sql", "result = api.query('SELECT list(range) FROM range(400000000)')", "MemoryLimit"),
    ("endless_sleep_loop", "import time\nwhile True:\n    time.sleep(0.1)", "Timeout"),
    ("cpu_spin", "while True:\n    pass", "CpuLimit"),
    ("huge_stdout", "while True:\n    print('x' * 1000)", "OutputLimit"),
    ("huge_result", "result = pd.DataFrame({'s': ['x' * 100_000] * 40})", "OutputLimit"),
    # the interpreter itself
    ("ctypes_call", "import ctypes\nctypes.CDLL(None).system(b'id')", "SecurityViolation"),
    ("clear_audit_hooks", "import ctypes\nctypes.pythonapi._PySys_ClearAuditHooks()", "SecurityViolation"),
    ("add_audit_hook", "import sys\nsys.addaudithook(lambda *a: None)", "SecurityViolation"),
    ("walk_gc_for_the_hook", "import gc\nresult = len(gc.get_objects())", "SecurityViolation"),
    ("swallowed_violation", "try:\n    open('/etc/passwd')\nexcept Exception:\n    pass\nresult = 1", "SecurityViolation"),
    ("raise_rlimits", "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (-1, -1))", "SecurityViolation"),
    # signals and exits
    ("kill_parent", "import os\nos.kill(os.getppid(), 9)", "SecurityViolation"),
    ("ignore_sigxcpu_then_spin", "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
     "CpuLimit"),
    ("alarm_handler", "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\nsignal.pthread_kill(0, 14)",
     "SecurityViolation"),
    ("sys_exit", "import sys\nsys.exit(0)", "RuntimeError"),
    ("os_exit", "import os\nos._exit(0)", "WorkerCrashed"),
]


# Reading the host's environment (an API key exported for the teacher). Every route
# fails, or finds only the job's own allow-listed variables (limits.JOB_ENVIRONMENT);
# None: the code runs and finds nothing secret.
ENVIRONMENT_ATTACKS = [
    ("os_environ_get", "import os\nresult = {'k': [os.environ.get('OPENAI_API_KEY')]}", None),
    ("os_getenv", "import os\nresult = str(os.getenv('OPENAI_API_KEY'))", None),
    ("whole_os_environ", "import os\nresult = dict(os.environ)", None),
    ("os_environb", "import os\nresult = repr(os.environb)", None),
    ("posix_environ", "import posix\nresult = repr(posix.environ)", None),
    ("print_environ", "import os\nprint([v for k, v in os.environ.items() if 'KEY' in k or 'DSN' in k])\nresult = 1", None),
    ("proc_self_environ", "result = open('/proc/self/environ', 'rb').read()", "SecurityViolation"),
    ("worker_proc_environ", "import os\nresult = open(f'/proc/{os.getppid()}/environ', 'rb').read()",
     "SecurityViolation"),
    ("init_proc_environ", "result = open('/proc/1/environ', 'rb').read()", "SecurityViolation"),
    ("thread_proc_environ", "import glob\nresult = [open(p, 'rb').read() for p in glob.glob('/proc/self/task/*/environ')]",
     "SecurityViolation"),
    ("environ_copy_from_thread", "import os, threading\nseen = []\n"
     "t = threading.Thread(target=lambda: seen.append(os.environ.copy()))\nt.start()\nt.join()\nresult = repr(seen)",
     "RuntimeError"),
    ("libc_getenv", "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.getenv.restype = ctypes.c_char_p\n"
     "result = libc.getenv(b'OPENAI_API_KEY')", "SecurityViolation"),
]


@pytest.fixture(scope="module")
def secrets_pool(warehouse):
    with pool_under_host_secrets(warehouse) as pool:
        yield pool


@pytest.mark.parametrize("code, expected", [a[1:] for a in ENVIRONMENT_ATTACKS], ids=[a[0] for a in ENVIRONMENT_ATTACKS])
def test_the_host_environment_does_not_reach_agent_code(secrets_pool, code, expected):
    run = secrets_pool.run(code)
    assert run.error_class == expected, run.error_message
    assert_no_host_secret(run)


def test_a_job_sees_only_the_allow_listed_environment(secrets_pool):
    run = secrets_pool.run("import os, posix\nresult = {'os': ' '.join(sorted(os.environ)), 'posix': "
                           "b' '.join(sorted(posix.environ)).decode(), 'home': os.environ['HOME'], "
                           "'tmp': os.environ['TMPDIR'], 'cwd': os.getcwd()}")
    seen = run.result_frame.iloc[0]
    assert seen["os"].split() == sorted([*JOB_ENVIRONMENT, "HOME", "TMPDIR"])
    assert seen["posix"] == seen["os"]
    assert seen["home"] == seen["tmp"] == seen["cwd"]  # the job's private temp dir


def test_the_allow_list_is_documented():
    doc = (Path(__file__).parents[2] / "docs" / "sandbox.md").read_text()
    for name, value in JOB_ENVIRONMENT.items():
        assert f"`{name}`" in doc and f"`{value}`" in doc, name


def test_workers_are_started_with_the_clean_environment_too(secrets_pool):
    # What /proc/PID/environ shows is the environment a process was exec'd with, and job
    # processes are forks of the worker: so the worker itself must never have had the secrets.
    worker = secrets_pool._workers[0].proc.pid
    names = {entry.split(b"=", 1)[0].decode() for entry in Path(f"/proc/{worker}/environ").read_bytes().split(b"\0") if entry}
    assert names == {*JOB_ENVIRONMENT, "HOME", "TMPDIR", "PYTHONPATH"}
    assert not any(value.encode() in Path(f"/proc/{worker}/environ").read_bytes() for value in HOST_SECRETS.values())


@pytest.fixture(scope="module")
def cpu_pool(warehouse):
    from dataclasses import replace

    from sandbox_support import TEST_LIMITS
    from runtime.sandbox import SandboxPool

    with SandboxPool(1, warehouse, replace(TEST_LIMITS, wall_timeout_s=60.0), "fake_api:make_api") as cpu_pool:
        yield cpu_pool


@pytest.mark.parametrize("code, expected", [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_attack_is_contained(request, pool, warehouse, warehouse_digest, code, expected):
    # CPU-limit cases get a generous wall clock: on a loaded host 1 s of CPU can
    # take many seconds of wall time, and the wall clock must not fire first.
    runner = request.getfixturevalue("cpu_pool") if expected == "CpuLimit" else pool
    run = runner.run(code)

    assert (run.ok, run.error_class) == (False, expected), run.error_message
    assert run.error_message
    assert sha256(warehouse) == warehouse_digest
    assert not Path("/tmp/craft-sandbox-escape.txt").exists() and not Path("/tmp/leak.csv").exists()
    follow_up = runner.run("result = api.query('SELECT count(*) AS n FROM campaigns')")
    assert follow_up.ok and follow_up.result_frame["n"].tolist() == [200]


def test_attack_catalogue_is_large():
    assert len(ATTACKS) >= 15 and len({a[0] for a in ATTACKS}) == len(ATTACKS)


def test_tampering_does_not_reach_the_next_job_in_the_same_worker(warehouse):
    from runtime.sandbox import SandboxPool
    from sandbox_support import TEST_LIMITS

    tamper = """
import sys, builtins, json
import runtime.sandbox.pool as host_pool
host_pool.SandboxPool = None
pd.DataFrame.sum = lambda *a, **k: 'owned'
builtins.len = lambda x: -1
sys.modules['json'] = None
api.calls.extend(['forged'] * 3)
type(api).query = lambda self, sql: 'owned'
result = 'tampered'
"""
    check = """
import json
result = {'sum': int(pd.DataFrame({'a': [1, 2]})['a'].sum()), 'len': len([1, 2]),
          'json': json.dumps([1]), 'query': int(api.query('SELECT 7 AS x')['x'][0])}
"""
    with SandboxPool(1, warehouse, TEST_LIMITS, "fake_api:make_api") as single:
        assert single.run(tamper).ok
        clean = single.run(check)
    assert clean.ok, clean.error_message
    assert clean.result_frame.to_dict("records") == [{"sum": 3, "len": 2, "json": "[1]", "query": 7}]
    assert clean.api_calls == ("query",)
    assert runtime.sandbox.SandboxPool is not None and os.getpid() > 0


def test_kill_of_the_worker_itself_is_survived(pool):
    # Even if a job could signal its worker, the pool replaces a dead worker.
    worker = pool._workers[0]
    os.killpg(worker.proc.pid, 9)
    worker.proc.wait()
    runs = pool.run_many(["result = 1"] * 4)
    assert all(r.ok or r.error_class == "WorkerCrashed" for r in runs)
    assert pool.run_many(["result = 2"] * 4)[-1].ok
