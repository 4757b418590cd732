"""Each kernel layer, tested alone: the audit hook is switched off here.

The audit hook is a Python-level second layer; these tests show what still holds
without it. Where a layer is unavailable on the host, the test checks the run
records it as inactive instead (and test_hostile_code shows the hook catching it).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sandbox_support import TEST_LIMITS, assert_no_host_secret, pool_under_host_secrets, sha256
from runtime.sandbox import SandboxPool


@pytest.fixture(scope="module")
def hookless_pool(warehouse):
    with SandboxPool(1, warehouse, replace(TEST_LIMITS, audit_hook=False), "fake_api:make_api") as pool:
        yield pool


def _errno_of(code: str) -> str:
    return f"import errno\ntry:\n{code}\nexcept OSError as exc:\n    result = errno.errorcode[exc.errno]"


def test_the_hook_is_recorded_as_off(hookless_pool):
    assert hookless_pool.run("result = 1").layers["audit_hook"] is False


def test_network_namespace_has_no_route_out(hookless_pool, pool):
    attack = "    import socket\n    socket.create_connection(('8.8.8.8', 53), timeout=2)"
    run = hookless_pool.run(_errno_of(attack))
    if run.layers["net_namespace"]:
        assert run.result_frame["result"][0] in ("ENETUNREACH", "EHOSTUNREACH")
    else:  # no namespace on this host: the hook is the fallback
        assert pool.run(_errno_of(attack)).error_class == "SecurityViolation"


def test_network_namespace_has_no_loopback_service(hookless_pool):
    run = hookless_pool.run(_errno_of("    import socket\n    socket.create_connection(('127.0.0.1', 22), timeout=2)"))
    assert run.ok
    if run.layers["net_namespace"]:
        assert run.result_frame["result"][0] in ("ENETUNREACH", "ECONNREFUSED", "EADDRNOTAVAIL")


def test_rlimit_nproc_refuses_fork(hookless_pool, pool):
    attack = "    import os\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    result = 'forked'"
    run = hookless_pool.run(_errno_of(attack))
    if run.layers["rlimit_nproc"]:
        assert run.result_frame["result"][0] == "EAGAIN"
    else:  # root ignores RLIMIT_NPROC: the hook is the fallback
        assert run.result_frame["result"][0] == "forked"
        assert pool.run(_errno_of(attack)).error_class == "SecurityViolation"


def test_dropped_uid_cannot_write_the_warehouse(hookless_pool, warehouse, warehouse_digest):
    db = "api.query(\"SELECT path FROM duckdb_databases() WHERE NOT internal\")['path'][0]"
    run = hookless_pool.run(_errno_of(f"    open({db}, 'r+b').write(b'corrupt')\n    result = 'written'"))
    if run.layers["uid_drop"]:
        assert run.result_frame["result"][0] == "EACCES"
        assert sha256(warehouse) == warehouse_digest
    else:
        pytest.fail("without a uid drop nothing but the hook protects the warehouse file; run as root to test")


def test_dropped_uid_cannot_signal_its_worker(hookless_pool):
    run = hookless_pool.run(_errno_of("    import os\n    os.kill(os.getppid(), 9)\n    result = 'killed'"))
    assert run.layers["uid_drop"] and run.result_frame["result"][0] == "EPERM"
    assert hookless_pool.run("result = 1").ok


# The worker forks the next job's process ahead of time, but only after the current
# job's process is dead: a running job never has a sibling it could signal or tamper with.
_SIGNAL_SIBLINGS = """
import os
me, parent, answers = os.getpid(), os.getppid(), []
for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == me:
        continue
    try:
        stat = open(f'/proc/{name}/stat').read()
    except OSError:
        continue
    if int(stat.rsplit(')', 1)[1].split()[1]) != parent:
        continue
    try:
        os.kill(int(name), 9)
        answers.append('killed')
    except OSError as exc:
        answers.append(errno.errorcode[exc.errno])
result = {'siblings': len(answers), 'answers': ','.join(answers), 'uid': os.getuid()}
"""


def test_a_running_job_has_no_sibling_in_its_worker_to_reach(hookless_pool):
    for _ in range(3):  # each run leaves the next job's process prepared and waiting
        run = hookless_pool.run("import errno" + _SIGNAL_SIBLINGS)
        assert run.ok and run.layers["uid_drop"], run.error_message
        assert (run.result_frame["siblings"][0], run.result_frame["answers"][0]) == (0, "")


def test_rlimit_fsize_stops_big_files(hookless_pool):
    run = hookless_pool.run("open('big.bin', 'wb').write(b'x' * (8 << 20))")
    assert run.layers["rlimit_fsize"] and run.error_class == "OutputLimit"


def test_private_tmp_is_the_working_directory_and_is_fresh(hookless_pool):
    first = hookless_pool.run("import os\nopen('note.txt', 'w').write('hi')\nresult = os.getcwd()")
    second = hookless_pool.run("import os\nresult = {'cwd': os.getcwd(), 'files': len(os.listdir('.'))}")
    assert first.ok and second.ok
    assert first.result_frame["result"][0] != second.result_frame["cwd"][0]
    assert second.result_frame["files"][0] == 0


@pytest.fixture(scope="module")
def hookless_secrets_pool(warehouse):
    with pool_under_host_secrets(warehouse, replace(TEST_LIMITS, audit_hook=False)) as pool:
        yield pool


@pytest.mark.parametrize("path", ["/proc/self/environ", "/proc/{ppid}/environ", "/proc/1/environ"])
def test_environ_files_are_unreadable_without_the_hook_and_hold_nothing_secret(hookless_secrets_pool, path):
    # The job's own and its worker's environ belong to other uids once the uid is dropped
    # (a process that changed uid is not dumpable); either way they hold only the allow-list.
    code = f"    import os\n    result = open({path!r}.format(ppid=os.getppid()), 'rb').read()"
    run = hookless_secrets_pool.run(_errno_of(code))
    assert run.ok, run.error_message
    if run.layers["uid_drop"]:
        assert run.result_frame["result"][0] == "EACCES"
    assert_no_host_secret(run)
