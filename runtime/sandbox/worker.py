"""The warm worker: a clean interpreter that never runs agent code itself.

Started by the pool as `python -m runtime.sandbox.worker`. It imports the heavy
libraries, opens the read-only warehouse connection and warms it up once. It
keeps one job process forked ahead (`PreparedChild`, running `child.serve_one_job`):
already isolated, it waits for its job on a pipe. For each job the worker hands
it the code, enforces the wall timeout, collects its report, answers the pool,
and only then kills and reaps that process and forks the next one.

Protocol (frames from `protocol`): pool -> worker `init`, then `job`s; worker ->
pool `ready`, then one `reply` per job. Stdin/stdout carry the frames.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import os
import select
import shutil
import signal
import sys
import tempfile
import time

# Imported before any fork so each job process starts with them loaded. With
# privileges dropped, job processes cannot read the interpreter's files when it
# lives in a private home, so common stdlib modules are loaded here too.
import collections, datetime, decimal, fractions, functools, itertools, json, math  # noqa: E401,F401
import random, re, statistics, string, textwrap, csv, io, operator, heapq, bisect  # noqa: E401,F401
import array, base64, calendar, copy, dataclasses, enum, glob, hashlib, inspect, pathlib  # noqa: E401,F401
import pprint, shutil, socket, struct, subprocess, threading, typing, uuid, warnings, zlib  # noqa: E401,F401
import encodings.idna, urllib.parse, zoneinfo  # noqa: E401,F401
import numpy
import pandas as pd
import pyarrow  # noqa: F401
import duckdb

from . import guards
from .child import SESSION_FINGERPRINT, serve_jobs, snapshot_host_state
from .limits import JOB_ENVIRONMENT, SandboxLimits
from .protocol import FrameError, FrameTimeout, read_frame, write_frame

_LOCKDOWN = (
    "SET enable_external_access = false",       # no files, no ATTACH of new files, no COPY TO
    "SET autoload_known_extensions = false",
    "SET autoinstall_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET lock_configuration = true",            # agent SQL cannot undo the above
)


def open_warehouse(db_path: str, memory_mb: int) -> tuple[duckdb.DuckDBPyConnection, dict]:
    # One thread: job processes are forks and may not start threads; no temp
    # directory, so DuckDB cannot spill files next to the warehouse.
    con = duckdb.connect(db_path, read_only=True,
                         config={"threads": 1, "temp_directory": "", "memory_limit": f"{memory_mb}MB"})
    for statement in _LOCKDOWN:
        con.execute(statement).fetchall()
    settings = dict(con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', 'lock_configuration')"
    ).fetchall())
    readonly = con.execute("SELECT bool_and(readonly) FROM duckdb_databases() WHERE NOT internal").fetchall()[0][0]
    layers = {"readonly_db": bool(readonly),
              "duckdb_locked": settings == {"enable_external_access": "false", "lock_configuration": "true"}}
    return con, layers


def _warm_up(con) -> None:
    # Lazy imports inside pandas/pyarrow/duckdb happen here, once, instead of in
    # every job process (where they cost time and may be unreadable).
    from .result import frame_from_bytes, frame_to_bytes, render_preview, to_frame

    frame = con.sql("SELECT 1 AS a, 'x' AS b, DATE '2024-01-01' AS d, 1.5::DECIMAL(10,2) AS m").df()
    frame = pd.concat([frame, to_frame({"a": [2], "b": ["y"]})]).groupby("b").agg({"a": "sum"}).reset_index()
    render_preview(frame_from_bytes(frame_to_bytes(frame)), 1)
    frame.describe(), frame.to_dict("records"), frame.merge(frame, on="b"), str(frame)
    for name in ("tables", "columns"):
        getattr(con, "execute")(f"SELECT * FROM duckdb_{name}() LIMIT 1").fetchall()


def _run_warmup_jobs(con, factory, jobs: list) -> int:
    """Run trusted code (a recipe's reference solutions) once in the worker, before any fork.

    A job process is a fresh fork that dies after one job, so whatever the first
    query of a kind builds lazily (parser tables, pandas and DuckDB code paths)
    would otherwise be built again in every job. Never pass model output here: this
    code runs in the worker, outside the job layers. Returns how many ran cleanly.
    """
    from .result import frame_to_bytes, render_preview, to_frame

    clean = 0
    for code, params in jobs:
        scope = {"__builtins__": __builtins__, "api": factory(con), "params": params, "pd": pd}
        try:
            exec(compile(code, "<warmup>", "exec", dont_inherit=True), scope)
            if scope.get("result") is not None:
                frame = to_frame(scope["result"])
                render_preview(frame, len(frame)), frame_to_bytes(frame.head(1000))
            clean += 1
        except Exception:  # noqa: BLE001 - a failing warm-up only leaves that path cold
            pass
    return clean


# Agent code may read the sandbox's own source: a traceback or a warning shown
# through the job process's frames looks it up (and nothing else lives there).
_SANDBOX_SOURCE = os.path.dirname(os.path.abspath(__file__))

_MADV_COLLAPSE = 25  # Linux 6.1+
_HUGE = 1 << 21


def _collapse_into_huge_pages() -> int:
    """Back the worker's private heap with 2 MiB pages where the kernel allows it.

    Forking copies one page-table entry per mapped page, and every job process
    pays for it twice (at fork and when it exits). A collapsed 2 MiB range costs
    one entry instead of 512. Job processes still copy-on-write in 4 KiB pages.
    Returns the number of huge pages made; 0 where THP is off or unsupported.
    """
    collapsed = 0
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        if not fields[1].startswith("rw-p") or (len(fields) > 5 and fields[5] != "[heap]"):
            continue  # private anonymous memory (and the brk heap) only
        start, end = (int(value, 16) for value in fields[0].split("-"))
        for huge in range((start + _HUGE - 1) & ~(_HUGE - 1), end & ~(_HUGE - 1), _HUGE):
            collapsed += guards.libc.madvise(ctypes.c_void_p(huge), ctypes.c_size_t(_HUGE), _MADV_COLLAPSE) == 0
    return collapsed


def _load_factory(spec: str):
    module_name, _, attr = spec.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    if not callable(factory):
        raise TypeError(f"`{spec}` is not callable")
    return factory


class PreparedChild:
    """A job process forked ahead of time: isolated, waiting on `job_fd` for its one job."""

    def __init__(self, ctx: dict, jobs_root: str, uid: int):
        self.temp_dir = tempfile.mkdtemp(prefix="job-", dir=jobs_root)
        if os.geteuid() == 0 and ctx["limits"].drop_privileges:
            os.chown(self.temp_dir, uid, uid)
        job_read, self.job_fd = os.pipe()
        self.result_fd, result_write = os.pipe()
        forked_at = time.monotonic()
        self.pid = os.fork()
        if self.pid == 0:  # job process
            try:
                os.close(self.job_fd)
                os.close(self.result_fd)
                serve_jobs({**ctx, "forked_at": forked_at}, self.temp_dir, uid, job_read, result_write)
            except BaseException:  # noqa: BLE001 - the worker reports the missing result
                os._exit(70)
            os._exit(0)
        self.fork_ms = round(1000 * (time.monotonic() - forked_at), 3)
        os.close(job_read)
        os.close(result_write)
        self.status: int | None = None
        self.cpu_s = 0.0
        self.maxrss_kb = 0
        self.layers: dict | None = None  # reported once, before the first job
        self.served = 0                  # jobs handed to this process so far
        self.reusable = False            # may take another job (its last report said so)

    def alive(self) -> bool:
        if self.status is None and os.waitpid(self.pid, os.WNOHANG)[0] == self.pid:
            self.status = -1  # reaped here: the usage is unknown, and unneeded for a process that never ran a job
        return self.status is None

    def send(self, job: dict) -> bool:
        """Hand the job over; False when the process is already gone."""
        try:
            write_frame(self.job_fd, job)
            return True
        except OSError:
            return False

    def reap(self, kill: bool = False) -> None:
        """Wait for the process (killing it first if asked) and keep its status and usage."""
        if self.status is not None:
            return
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, self.status, usage = os.wait4(self.pid, 0)
        self.cpu_s, self.maxrss_kb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss

    def cpu_so_far(self) -> float:
        """CPU seconds the (still running) process used, from the kernel's per-thread accounting."""
        total_ns = 0
        try:
            for task in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{task}/schedstat") as stat:
                    total_ns += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            self.reap(kill=True)  # no /proc: fall back to the exit usage
            return self.cpu_s
        return total_ns / 1e9

    def retire(self) -> None:
        """Kill (it has reported or failed), reap and remove its temp dir."""
        for fd in (self.job_fd, self.result_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.reap(kill=True)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


# Outcomes after which a job process may take another job (with jobs_per_process > 1).
# Anything else (a violation, a limit hit, a crash) ends it.
_REUSABLE_AFTER = (None, "NoResult", "SyntaxError", "RuntimeError")


_CPU_POLL_S = 0.1


def _wait_for_report(child: PreparedChild, deadline: float, cpu_limit_at: float | None) -> str | None:
    """Wait until the job process has something to say (None), or name the limit it hit first."""
    if cpu_limit_at is None:
        return None  # read_frame enforces the deadline; the kernel enforces RLIMIT_CPU
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "Timeout"
        if select.select([child.result_fd], [], [], min(left, _CPU_POLL_S))[0]:
            return None
        if child.cpu_so_far() >= cpu_limit_at:
            return "CpuLimit"


def run_one(child: PreparedChild, job: dict, ctx: dict) -> tuple[dict, bytes]:
    """Give `job` to a prepared job process and collect its report within the limits."""
    limits: SandboxLimits = ctx["limits"]
    started = time.monotonic()
    fresh = child.served == 0
    cpu_before = 0.0 if fresh else child.cpu_so_far()
    # A reused process's RLIMIT_CPU covers all its jobs, so the worker holds each job
    # to its own budget (raising another uid's soft limit needs CAP_SYS_RESOURCE).
    cpu_limit_at = cpu_before + limits.cpu_s if limits.jobs_per_process > 1 else None
    report, payload, failure = None, b"", None
    child.served += 1
    child.reusable = False
    if not child.send(job):
        failure = "Exited"
    else:
        deadline = started + limits.wall_timeout_s
        cap = limits.max_result_bytes + limits.max_stdout_chars * 4 + (1 << 20)
        try:
            if child.layers is None:
                header, _ = read_frame(child.result_fd, deadline, cap)
                child.layers = header.get("layers", {}) if isinstance(header.get("layers"), dict) else {}
            failure = _wait_for_report(child, deadline, cpu_limit_at)
            if failure is None:
                report, payload = read_frame(child.result_fd, deadline, cap)
        except FrameTimeout:
            failure = "Timeout"
        except FrameError as exc:
            failure = "OutputLimit" if "exceeds the cap" in str(exc) else "Exited"
    wall_s = time.monotonic() - started
    if report is not None and failure is None:
        # The job has reported: its exit status tells nothing more, so the reply
        # goes out now and the process is killed and reaped after it (or kept,
        # when it may serve another job).
        cpu_s, maxrss_mb, sig, exit_code = child.cpu_so_far() - cpu_before, 0.0, None, None
        child.reusable = report.get("reusable") is True and report.get("error_class") in _REUSABLE_AFTER
    else:
        child.reap(kill=failure in ("Timeout", "OutputLimit", "CpuLimit"))
        status = child.status
        cpu_s, maxrss_mb = child.cpu_s - cpu_before, child.maxrss_kb / 1024
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    spans = {"fork": child.fork_ms if fresh else 0.0, "job": round(1000 * wall_s, 3)}
    if isinstance(report, dict) and isinstance(report.get("spans"), dict):
        spans.update({f"job.{k}": v for k, v in report["spans"].items() if isinstance(v, (int, float))})
    layers = {**ctx["layers"], **(child.layers or {}), "fresh_process": fresh}
    reply = {"kind": "reply", "layers": layers, "report": report,
             "failure": failure, "wall_s": wall_s, "cpu_s": cpu_s, "maxrss_mb": maxrss_mb,
             "signal": sig, "exit_code": exit_code, "spans": spans}
    return reply, payload


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def main() -> None:
    # Frames travel on the original stdin/stdout; anything else printed (by a
    # library, say) goes to stderr instead of corrupting the protocol.
    in_fd, out_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    guards.die_with_parent()
    clean_environment = guards.started_with_only({*JOB_ENVIRONMENT, "TMPDIR", "HOME", "PYTHONPATH"})
    try:
        init, _ = read_frame(in_fd)
        sys.path[:] = init["sys_path"]
        limits = SandboxLimits(**init["limits"])
        net = guards.enter_network_namespace()
        con, db_layers = open_warehouse(init["db_path"], limits.memory_mb)
        factory = _load_factory(init["api_factory"])
        _warm_up(con)
        warmed = _run_warmup_jobs(con, factory, init.get("warmup", []))
        # Built once and never used here: each job process gets its own pristine
        # copy through the fork, instead of building one per job.
        api = factory(con)
    except Exception as exc:  # noqa: BLE001 - reported to the pool as a setup error
        write_frame(out_fd, {"kind": "ready", "ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    jobs_root = tempfile.mkdtemp(prefix="craft-sandbox-")
    os.chmod(jobs_root, 0o711)  # job uids must traverse it, not list it
    ctx = {"limits": limits, "api": api, "api_factory": factory, "con": con, "host_state": snapshot_host_state(),
           "numpy_rng_state": numpy.random.get_state(),
           "session_baseline": list(con.execute(SESSION_FINGERPRINT).fetchall()[0]), "read_roots": guards.interpreter_read_roots() + (_SANDBOX_SOURCE,),
           "keep_fds": _open_fds() - {in_fd, out_fd},
           "layers": {"process": True, "wall_timeout": True, "net_namespace": net, "clean_environment": clean_environment,
                      **db_layers}}
    # Objects that exist now are never collected: job processes then do not
    # touch (copy) their pages when the garbage collector runs.
    gc.collect()
    gc.freeze()
    huge_pages = _collapse_into_huge_pages()
    write_frame(out_fd, {"kind": "ready", "ok": True, "layers": ctx["layers"], "pid": os.getpid(),
                         "warmup_clean": warmed, "huge_pages": huge_pages})
    uid, child = limits.sandbox_uid_base + init["slot"], None
    try:
        child = PreparedChild(ctx, jobs_root, uid)
        while True:
            try:
                job, _ = read_frame(in_fd)
            except FrameError:
                return  # the pool closed the pipe
            if job.get("kind") == "close":
                return
            if not child.alive():  # died while waiting (it never ran agent code): replace it
                child.retire()
                child = PreparedChild(ctx, jobs_root, uid)
            reply, payload = run_one(child, job, ctx)
            write_frame(out_fd, reply, payload)
            if child.reusable:
                continue
            # After the reply, off the pool's clock: end this job's process, then
            # (never before: one job process per worker at a time) prepare the next.
            child.retire()
            child = PreparedChild(ctx, jobs_root, uid)
    finally:
        if child is not None:
            child.retire()
        shutil.rmtree(jobs_root, ignore_errors=True)


if __name__ == "__main__":
    main()
