"""One job, inside a process freshly forked from the worker.

A fresh fork per job is what makes reuse safe: whatever agent code patches
(modules, builtins, the API object, DuckDB session state) dies with this
process, and the next job runs in another process forked from the untouched
worker. The worker forks that process ahead of time; it isolates itself and
then waits on a pipe for its one job.
"""

from __future__ import annotations

import builtins
import os
import random
import shutil
import sys
import time
import traceback
import warnings

import duckdb
import numpy
import pandas as pd

from . import guards
from .limits import job_environment
from .protocol import read_frame, write_frame
from .result import frame_to_bytes, to_frame

__all__ = ["serve_jobs", "reset_between_jobs", "snapshot_host_state", "SESSION_FINGERPRINT"]


class OutputOverflow(BaseException):
    """Raised from print() once the stdout budget is spent (BaseException: hard to swallow)."""


class TailBuffer:
    """A stdout stand-in that keeps only the tail and stops the job past a budget."""

    def __init__(self, tail_chars: int, total_chars: int):
        self.tail_chars, self.total_chars = tail_chars, total_chars
        self.parts: list[str] = []
        self.kept = self.written = 0
        self.overflowed = False

    def write(self, text) -> int:
        text = str(text)
        self.written += len(text)
        self.parts.append(text[-self.tail_chars:])
        self.kept += min(len(text), self.tail_chars)
        if self.kept > 2 * self.tail_chars:
            self.parts = [self.tail()]
            self.kept = len(self.parts[0])
        if self.written > self.total_chars:
            self.overflowed = True
            raise OutputOverflow(f"more than {self.total_chars} characters printed")
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def tail(self) -> str:
        return "".join(self.parts)[-self.tail_chars:]


class Spans:
    """Milliseconds spent in each step since the previous mark (for profiling the job path)."""

    def __init__(self, since: float | None):
        self.last = since if since is not None else time.monotonic()
        self.durations: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.durations[name] = round(1000 * (now - self.last), 3)
        self.last = now

    def restart(self) -> None:
        self.last = time.monotonic()


def _close_inherited_fds(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _agent_line(exc: BaseException) -> str:
    # walk_tb, not extract_tb: no source lookup, which would open files under the hook.
    lines = [line for frame, line in traceback.walk_tb(exc.__traceback__) if frame.f_code.co_filename == "<agent>"]
    return f" (line {lines[-1]})" if lines else ""


def _classify(exc: BaseException, violations: list, stdout: TailBuffer) -> tuple[str, str, str]:
    """Map an exception raised by agent code to (error_class, error_type, message)."""
    kind = type(exc).__name__
    message = f"{kind}: {str(exc)[:300]}{_agent_line(exc)}"
    if violations:
        return "SecurityViolation", kind, violations[0]
    if stdout.overflowed or isinstance(exc, OutputOverflow):
        return "OutputLimit", "OutputOverflow", f"stdout exceeded {stdout.total_chars} characters"
    if isinstance(exc, MemoryError) or isinstance(exc, duckdb.OutOfMemoryException):
        return "MemoryLimit", kind, message
    if isinstance(exc, OSError) and exc.errno == 27:  # EFBIG: RLIMIT_FSIZE
        return "OutputLimit", kind, message
    return "RuntimeError", kind, message


def serve_jobs(ctx: dict, temp_dir: str, uid: int, job_fd: int, out_fd: int) -> None:
    """Isolate this process, then run jobs from `job_fd` and report each on `out_fd`.

    Runs in a process the worker forks *before* the job arrives, so forking and
    isolating happen while the previous job still runs; the job itself only pays
    for compiling and executing its code. It serves one job, or with
    `limits.jobs_per_process` > 1 up to that many, each after `reset_between_jobs`;
    the worker ends it sooner after any job that did not end cleanly.
    """
    spans = Spans(ctx.get("forked_at"))
    limits, layers, violations = ctx["limits"], {}, []
    guards.die_with_parent()
    spans.mark("child_start")
    keep_fds = {job_fd, out_fd, *ctx["keep_fds"]}
    _close_inherited_fds(keep=keep_fds)
    os.chdir(temp_dir)
    # Exactly the allow-list (the worker already started from it; a library may have added to it since).
    os.environ.clear()
    os.environ.update(job_environment(temp_dir))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # native code printing must not reach the host's terminal
        os.dup2(devnull, fd)
    os.close(devnull)
    spans.mark("fds_tmp")
    layers["uid_drop"] = limits.drop_privileges and guards.drop_privileges(uid)
    spans.mark("uid_drop")
    layers.update(guards.apply_rlimits(limits))
    spans.mark("rlimits")
    layers["private_tmp"] = True
    # Imports after this point search only the interpreter's own directories,
    # never the host's working tree.
    sys.path[:] = [p for p in sys.path if p.startswith(ctx["read_roots"])]
    ctx = {**ctx, "process_state": _process_state()}  # what reset_between_jobs puts back
    api = ctx["api"]  # built in the worker and never used there: pristine in every job process
    layers["audit_hook"] = limits.audit_hook and guards.install_audit_hook(temp_dir, ctx["read_roots"], violations)
    spans.mark("audit_hook")
    # Layers are reported before agent code runs, so agent code cannot forge them.
    write_frame(out_fd, {"kind": "layers", "layers": layers})
    for served in range(limits.jobs_per_process):
        job, _ = read_frame(job_fd)
        # What follows is the job's own time, measured from its arrival (a reused
        # process's later jobs have no start-up steps to report).
        spans = Spans(None) if served else spans
        spans.restart()
        stdout = TailBuffer(limits.max_stdout_chars, limits.max_stdout_total_chars)
        sys.stdout = sys.stderr = stdout
        report, payload = run_agent_code(job, api, violations, stdout, limits, spans, ctx["host_state"])
        if served + 1 < limits.jobs_per_process:
            # Cleaned up before reporting: a reset that fails ends this process now
            # instead of failing the next job.
            api = None if violations else reset_between_jobs(ctx, temp_dir, keep_fds)
            report["reusable"] = api is not None and not violations  # the reset itself is audited too
            spans.mark("reset")
        report["spans"] = spans.durations
        write_frame(out_fd, report, payload)
        if not report.get("reusable"):
            return


def reset_between_jobs(ctx: dict, temp_dir: str, keep_fds: set[int]):
    """Undo what the last job left that the next one could see; a fresh API, or None if unsafe.

    Put back: builtins, sys.modules and sys.path, the environment, warning filters,
    the recursion limit, numpy's error handling, pandas options (the worker never sets
    any), the random generators as a fork has them, an empty temp dir, no descriptors
    but the process's own, a new API object; and the DuckDB session must be as the
    worker left it. Not undone: changes to other module attributes (a patched pandas
    function stays patched), which is why reuse is for trusted code (docs/sandbox.md,
    "Reusing job processes").
    """
    try:
        api = _reset(ctx, temp_dir, keep_fds)  # first: the check below needs working Python state
        return api if _session_unchanged(ctx) else None
    except Exception:  # noqa: BLE001 - whatever stops the clean-up ends the process
        return None


# Bound at import: agent code that replaces `os.scandir` cannot stop the clean-up.
_scandir, _remove, _rmtree, _closerange = os.scandir, os.remove, shutil.rmtree, os.closerange
_random_seed, _numpy_set_state = random.seed, numpy.random.set_state


def _process_state() -> dict:
    return {"path": list(sys.path), "environ": dict(os.environ), "warnings": list(warnings.filters),
            "recursion": sys.getrecursionlimit(), "numpy_err": numpy.geterr()}


def _reset(ctx: dict, temp_dir: str, keep_fds: set[int]):
    saved_builtins, saved_modules = ctx["host_state"]
    builtins.__dict__.update(saved_builtins)
    sys.modules.update(saved_modules)
    state = ctx["process_state"]
    sys.path[:] = state["path"]
    os.environ.clear()
    os.environ.update(state["environ"])
    warnings.filters[:] = state["warnings"]
    sys.setrecursionlimit(state["recursion"])
    numpy.seterr(**state["numpy_err"])
    with warnings.catch_warnings():  # some options are deprecated, and resetting them says so
        warnings.simplefilter("ignore")
        pd.reset_option(r"^(?!plotting\.)")  # resetting the plotting backend would import matplotlib
    _random_seed()  # as in a fresh fork: the random module reseeds itself after fork
    _numpy_set_state(ctx["numpy_rng_state"])  # numpy does not: a fork inherits the worker's
    for entry in _scandir(temp_dir):
        if entry.is_dir(follow_symlinks=False):
            _rmtree(entry.path)
        else:
            _remove(entry.path)
    for low, high in _gaps(keep_fds, ctx["limits"].max_open_files + 8):
        _closerange(low, high)
    return ctx["api_factory"](ctx["con"])


def _gaps(keep: set[int], limit: int) -> list[tuple[int, int]]:
    """[low, high) ranges of descriptors from 3 up to `limit` that are not in `keep`."""
    edges = [2, *sorted(fd for fd in keep if fd > 2), max(limit, max(keep, default=0) + 1)]
    return [(a + 1, b) for a, b in zip(edges, edges[1:]) if b > a + 1]


# State a job can add to the shared DuckDB session even on a read-only file (temp
# tables and views, variables, prepared statements, a search path), any of which would
# change what the next job's SQL means. Compared with the worker's baseline. Temp macros
# and types are not listed: duckdb_functions() alone costs ~10 ms, and only raw
# connection access (not the API's SELECT-only `query`) can create them.
SESSION_FINGERPRINT = """
SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary),
       (SELECT count(*) FROM duckdb_views() WHERE temporary AND database_name = 'temp'),
       (SELECT count(*) FROM duckdb_variables()),
       (SELECT count(*) FROM duckdb_prepared_statements()),
       current_setting('search_path'), current_database(), current_schema()
"""


def _session_unchanged(ctx: dict) -> bool:
    try:
        return list(ctx["con"].execute(SESSION_FINGERPRINT).fetchall()[0]) == ctx["session_baseline"]
    except Exception:  # noqa: BLE001 - a closed or broken connection is not reusable
        return False


def snapshot_host_state() -> tuple[dict, dict]:
    """Copies of builtins and sys.modules, taken in the worker before any fork.

    A job process inherits them for free; copying them in each job would touch
    (and so copy-on-write) the page of every module object, some 500 pages.
    """
    return dict(builtins.__dict__), dict(sys.modules)


def run_agent_code(job: dict, api, violations: list, stdout: "TailBuffer", limits, spans: "Spans",
                   host_state: tuple[dict, dict]) -> tuple[dict, bytes]:
    """Compile and execute agent code in this (already isolated) process; returns the report and payload."""
    report = {"kind": "result", "ok": False, "error_class": None, "error_type": None,
              "error_message": None, "result_rows": 0}
    payload = b""
    agent_globals = {"__builtins__": builtins, "__name__": "__agent__", "api": api,
                     "params": job["params"], "pd": pd}
    try:
        compiled = compile(job["code"], "<agent>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        line = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        report.update(error_class="SyntaxError", error_type=type(exc).__name__,
                      error_message=f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{line}")
        compiled = None
    spans.mark("compile")
    if compiled is not None:
        # Agent code may break builtins or sys.modules for fun; the report below
        # needs them, so they are put back (the process dies right after). Builtins
        # always: a replaced `len` would miscount silently. sys.modules only when
        # packaging failed: restoring it touches every module object.
        saved_builtins, saved_modules = host_state
        try:
            try:
                exec(compiled, agent_globals)
            finally:
                builtins.__dict__.update(saved_builtins)
                spans.mark("exec")
            try:
                payload = _package_result(agent_globals, report, limits)
            except Exception:  # noqa: BLE001 - retried once with the host's modules put back
                sys.modules.update(saved_modules)
                payload = _package_result(agent_globals, report, limits)
        except BaseException as exc:  # noqa: BLE001 - every failure of agent code is a report
            report.update(zip(("error_class", "error_type", "error_message"), _classify(exc, violations, stdout)))
        if violations:  # refused even when agent code caught the Violation
            report.update(ok=False, error_class="SecurityViolation", error_type="Violation",
                          error_message=violations[0])
            payload = b""
    calls = getattr(api, "calls", ())
    report["api_calls"] = [str(c)[:200] for c in list(calls)[:1000]] if isinstance(calls, (list, tuple)) else []
    report["stdout_tail"] = stdout.tail()
    spans.mark("package")
    return report, payload


def _package_result(agent_globals: dict, report: dict, limits) -> bytes:
    if agent_globals.get("result") is None:
        report.update(error_class="NoResult", error_type=None,
                      error_message="the code finished without assigning `result`")
        return b""
    frame = to_frame(agent_globals["result"])
    report["result_rows"] = len(frame)
    payload = frame_to_bytes(frame.head(limits.max_result_rows))
    if len(payload) > limits.max_result_bytes:
        report.update(error_class="OutputLimit", error_type=None, result_rows=len(frame),
                      error_message=f"result is {len(payload)} bytes serialized, over the {limits.max_result_bytes} byte limit")
        return b""
    report["ok"] = True
    return payload
