"""The warm worker: a clean interpreter that never runs agent code itself.

Started by the pool as `python -m runtime.sandbox.worker`. It imports the heavy
libraries, opens the read-only warehouse connection and warms it up once; then,
for each job, forks a job process (see `child.run_job`), enforces the wall
timeout on it, collects its report and rusage, and answers the pool.

Protocol (frames from `protocol`): pool -> worker `init`, then `job`s; worker ->
pool `ready`, then one `reply` per job. Stdin/stdout carry the frames.
"""

from __future__ import annotations

import gc
import importlib
import os
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
import numpy  # noqa: F401
import pandas as pd
import pyarrow  # noqa: F401
import duckdb

from . import guards
from .child import run_job
from .limits import SandboxLimits
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


def _load_factory(spec: str):
    module_name, _, attr = spec.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    if not callable(factory):
        raise TypeError(f"`{spec}` is not callable")
    return factory


def _reap(pid: int) -> tuple[int, float, int]:
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def run_one(job: dict, ctx: dict, jobs_root: str, slot: int) -> tuple[dict, bytes]:
    limits: SandboxLimits = ctx["limits"]
    temp_dir = tempfile.mkdtemp(prefix="job-", dir=jobs_root)
    uid = limits.sandbox_uid_base + slot
    if os.geteuid() == 0 and limits.drop_privileges:
        os.chown(temp_dir, uid, uid)
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # job process
        try:
            os.close(read_fd)
            run_job({**job, "temp_dir": temp_dir, "uid": uid}, ctx, write_fd)
        except BaseException:  # noqa: BLE001 - the parent reports the missing result
            os._exit(70)
        os._exit(0)
    os.close(write_fd)
    deadline = started + limits.wall_timeout_s
    cap = limits.max_result_bytes + limits.max_stdout_chars * 4 + (1 << 20)
    layers, report, payload, failure = {}, None, b"", None
    try:
        header, _ = read_frame(read_fd, deadline, cap)
        layers = header.get("layers", {}) if isinstance(header.get("layers"), dict) else {}
        report, payload = read_frame(read_fd, deadline, cap)
    except FrameTimeout:
        failure = "Timeout"
    except FrameError as exc:
        failure = "OutputLimit" if "exceeds the cap" in str(exc) else "Exited"
    if failure in ("Timeout", "OutputLimit"):
        os.kill(pid, signal.SIGKILL)
    os.close(read_fd)
    status, cpu_s, maxrss_kb = _reap(pid)
    wall_s = time.monotonic() - started
    shutil.rmtree(temp_dir, ignore_errors=True)
    reply = {"kind": "reply", "layers": {**ctx["layers"], **layers}, "report": report,
             "failure": failure, "wall_s": wall_s, "cpu_s": cpu_s, "maxrss_mb": maxrss_kb / 1024,
             "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
             "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}
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
    try:
        init, _ = read_frame(in_fd)
        sys.path[:] = init["sys_path"]
        limits = SandboxLimits(**init["limits"])
        net = guards.enter_network_namespace()
        con, db_layers = open_warehouse(init["db_path"], limits.memory_mb)
        factory = _load_factory(init["api_factory"])
        _warm_up(con)
    except Exception as exc:  # noqa: BLE001 - reported to the pool as a setup error
        write_frame(out_fd, {"kind": "ready", "ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    jobs_root = tempfile.mkdtemp(prefix="craft-sandbox-")
    os.chmod(jobs_root, 0o711)  # job uids must traverse it, not list it
    ctx = {"limits": limits, "con": con, "api_factory": factory, "read_roots": guards.interpreter_read_roots(),
           "keep_fds": _open_fds() - {in_fd, out_fd}, "layers": {"process": True, "wall_timeout": True, "net_namespace": net, **db_layers}}
    # Objects that exist now are never collected: job processes then do not
    # touch (copy) their pages when the garbage collector runs.
    gc.collect()
    gc.freeze()
    write_frame(out_fd, {"kind": "ready", "ok": True, "layers": ctx["layers"], "pid": os.getpid()})
    try:
        while True:
            try:
                job, _ = read_frame(in_fd)
            except FrameError:
                return  # the pool closed the pipe
            if job.get("kind") == "close":
                return
            reply, payload = run_one(job, ctx, jobs_root, init["slot"])
            write_frame(out_fd, reply, payload)
    finally:
        shutil.rmtree(jobs_root, ignore_errors=True)


if __name__ == "__main__":
    main()
