"""Host side: a pool of warm workers that run agent code, one job per worker at a time."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from runtime.layout import API_FACTORY

from .limits import SandboxError, SandboxLimits, job_environment
from .protocol import FrameError, FrameTimeout, read_frame, write_frame
from .redact import Redactor, secret_values
from .result import ERROR_CLASSES, ExecResult, frame_from_bytes, render_preview

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding `runtime/`
_FACTORY_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_READY_TIMEOUT_S = 120.0   # importing pandas/duckdb on a loaded machine can be slow
_MAX_WARMUP = 200          # warm-up jobs per worker: enough for one of each reference solution
_REPLY_GRACE_S = 10.0      # beyond the job's own wall limit, before the worker is presumed hung


class _Worker:
    """One warm worker process and the pipes to it."""

    def __init__(self, slot: int, init: dict):
        self.slot, self.init = slot, init
        self.layers: dict[str, bool] = {}
        self.warmed_up = 0
        self.huge_pages = 0
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runtime.sandbox.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None if os.environ.get("CRAFT_SANDBOX_DEBUG") else subprocess.DEVNULL,
            cwd=_PACKAGE_ROOT, env=worker_environment(), start_new_session=True)
        write_frame(self.proc.stdin.fileno(), {**self.init, "slot": self.slot})

    def wait_ready(self) -> None:
        try:
            ready, _ = read_frame(self.proc.stdout.fileno(), time.monotonic() + _READY_TIMEOUT_S)
        except FrameError as exc:
            self.kill()
            raise SandboxError(f"sandbox worker {self.slot} did not start: {exc}") from None
        if not ready.get("ok"):
            self.kill()
            raise SandboxError(f"sandbox worker could not set up: {ready.get('error')}")
        self.layers = ready["layers"]
        self.warmed_up = int(ready.get("warmup_clean", 0))
        self.huge_pages = int(ready.get("huge_pages", 0))

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: takes the job process too
            self.proc.wait()

    def close(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                write_frame(self.proc.stdin.fileno(), {"kind": "close"})
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        for pipe in (self.proc.stdin, self.proc.stdout) if self.proc else ():
            pipe.close()

    def execute(self, job: dict, limits: SandboxLimits, redactor: Redactor) -> ExecResult:
        deadline = time.monotonic() + limits.wall_timeout_s + _REPLY_GRACE_S
        started = time.perf_counter()
        try:
            write_frame(self.proc.stdin.fileno(), job)
            reply, payload = read_frame(self.proc.stdout.fileno(), deadline)
        except (FrameError, OSError) as exc:
            # The worker itself hung or died: replace it, report what the job saw.
            self.kill()
            self.close()
            self.start()
            self.wait_ready()
            timed_out = isinstance(exc, FrameTimeout)
            return ExecResult(
                ok=False, error_class="Timeout" if timed_out else "WorkerCrashed",
                error_message="the sandbox worker stopped answering and was replaced" if timed_out
                else "the sandbox worker died and was replaced",
                wall_s=time.perf_counter() - started, layers=dict(self.layers), worker_slot=self.slot)
        # Every consumer (gate outcomes, tool messages, trajectories) gets the redacted result.
        return redactor.result(build_result(reply, payload, limits, self.slot), payload)


def worker_environment() -> dict[str, str]:
    """The whole environment a worker is exec'd with: the job allow-list, and where its imports live.

    Exec'd, not inherited and then cleaned: `/proc/PID/environ` and `posix.environ` show
    the environment a process was started with, and job processes are forks of the worker.
    PYTHONPATH is this interpreter's `sys.path`, so the worker imports what the host does.
    """
    return {**job_environment(tempfile.gettempdir()),
            "PYTHONPATH": os.pathsep.join(dict.fromkeys([_PACKAGE_ROOT, *(p for p in sys.path if p)]))}


def _failure(reply: dict, limits: SandboxLimits) -> tuple[str, str]:
    """Name what happened to a job process that did not report."""
    failure, sig, cpu_s = reply.get("failure"), reply.get("signal"), reply.get("cpu_s", 0.0)
    if failure == "Timeout" and cpu_s >= limits.cpu_s:
        # Over its CPU budget already (SIGXCPU ignored, hard kill not yet due):
        # on a loaded host the wall clock simply fired first.
        return "CpuLimit", f"used {cpu_s:.1f} s of CPU (limit {limits.cpu_s} s) before the wall-clock kill"
    if failure == "Timeout":
        return "Timeout", f"killed after the {limits.wall_timeout_s:g} s wall-clock limit"
    if failure == "CpuLimit":  # a reused process, stopped by its worker
        return "CpuLimit", f"killed after {cpu_s:.1f} s of CPU (limit {limits.cpu_s} s)"
    if failure == "OutputLimit":
        return "OutputLimit", "the job sent more output than the result limits allow"
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= limits.cpu_s - 0.5):
        return "CpuLimit", f"killed after {cpu_s:.1f} s of CPU (limit {limits.cpu_s} s)"
    if sig is not None and reply.get("maxrss_mb", 0) >= 0.8 * limits.memory_mb:
        return "MemoryLimit", f"killed by {signal.Signals(sig).name} near the {limits.memory_mb} MB memory limit"
    if sig is not None:
        return "WorkerCrashed", f"the job process was killed by {signal.Signals(sig).name}"
    return "WorkerCrashed", f"the job process exited (status {reply.get('exit_code')}) without reporting a result"


def build_result(reply: dict, payload: bytes, limits: SandboxLimits, slot: int) -> ExecResult:
    report = reply.get("report") if isinstance(reply.get("report"), dict) else None
    common = {"wall_s": float(reply.get("wall_s", 0.0)), "cpu_s": float(reply.get("cpu_s", 0.0)),
              "layers": {str(k): bool(v) for k, v in reply.get("layers", {}).items()}, "worker_slot": slot,
              "timings": {str(k): float(v) for k, v in (reply.get("spans") or {}).items() if isinstance(v, (int, float))}}
    if report is None or reply.get("failure") in ("Timeout", "OutputLimit", "CpuLimit"):
        error_class, message = _failure(reply, limits)
        return ExecResult(ok=False, error_class=error_class, error_message=message, **common)
    frame = None
    if report.get("ok") and payload:
        try:
            frame = frame_from_bytes(payload)
        except Exception:  # noqa: BLE001 - a forged or corrupt payload is the job's failure
            return ExecResult(ok=False, error_class="WorkerCrashed", error_message="unreadable result payload", **common)
    rows = int(report.get("result_rows") or 0)
    error_class = report.get("error_class")
    return ExecResult(
        ok=bool(report.get("ok")) and frame is not None,
        error_class=error_class if error_class in ERROR_CLASSES else ("WorkerCrashed" if error_class else None),
        error_type=_short(report.get("error_type"), 80), error_message=_short(report.get("error_message"), 500),
        result_frame=frame, result_rows=rows,
        result_columns=tuple(str(c) for c in frame.columns) if frame is not None else (),
        result_preview=render_preview(frame, rows), stdout_tail=_short(report.get("stdout_tail"), limits.max_stdout_chars) or "",
        api_calls=tuple(str(c) for c in report.get("api_calls", ()) if isinstance(c, str)), **common)


def _short(value, limit: int):
    return None if value is None else str(value)[:limit]


def _job_frame(code, params=None) -> dict:
    if not isinstance(code, str):
        raise SandboxError(f"agent code must be a string, got {type(code).__name__}")
    params = {} if params is None else params
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise SandboxError("params must be a dict with string keys")
    try:
        json.dumps(params)
    except (TypeError, ValueError) as exc:
        raise SandboxError(f"params must be JSON-serializable: {exc}") from None
    return {"kind": "job", "code": code, "params": params}


class SandboxPool:
    """Warm, isolated workers that execute agent code against a read-only warehouse.

    `warmup` is trusted code (code strings or (code, params) pairs, typically the
    recipe's reference solutions) that each worker runs once before it forks any job
    process, so that lazily built state (parser tables, pandas and DuckDB code paths)
    is inherited by every job instead of rebuilt in each. It runs in the worker,
    outside the job layers: never pass model output.

    Example (not run here: needs a built warehouse and starts worker processes)::

        with SandboxPool(2, "runs/ads/world/warehouse.duckdb", SandboxLimits()) as pool:
            frame = pool.run("result = api.query('SELECT 42 AS answer')").result_frame
    """

    def __init__(self, n_workers: int, db_path: str | os.PathLike, limits: SandboxLimits | None = None,
                 api_factory: str = API_FACTORY, warmup=()):
        if not isinstance(n_workers, int) or n_workers < 1:
            raise SandboxError(f"n_workers must be a positive integer, got {n_workers!r}")
        if not Path(db_path).is_file():
            raise SandboxError(f"warehouse `{db_path}` does not exist: build the world first")
        if not isinstance(api_factory, str) or not _FACTORY_SPEC.match(api_factory):
            raise SandboxError(f"api_factory must look like `package.module:callable`, got {api_factory!r}")
        self.limits = limits or SandboxLimits()
        # Values read now, in the host: workers and jobs never have them (worker_environment).
        self._redactor = Redactor(secret_values(self.limits.secret_env))
        # Trusted code only (reference solutions): it runs in the workers themselves.
        warmup = [_job_frame(*((job,) if isinstance(job, str) else tuple(job))) for job in warmup][:_MAX_WARMUP]
        init = {"kind": "init", "db_path": str(Path(db_path).resolve()), "api_factory": api_factory,
                "limits": self.limits.to_dict(), "sys_path": [_PACKAGE_ROOT, *[p for p in sys.path if p]],
                "warmup": [(job["code"], job["params"]) for job in warmup]}
        self._workers = [_Worker(slot, init) for slot in range(n_workers)]
        self._idle: queue.Queue[_Worker] = queue.Queue()
        try:
            for worker in self._workers:  # start all, then wait: imports overlap
                worker.start()
            for worker in self._workers:
                worker.wait_ready()
                self._idle.put(worker)
        except BaseException:
            self.close()
            raise
        self._closed = False

    @property
    def layers(self) -> dict[str, bool]:
        """Worker-level layers as reported at start-up (jobs add their own)."""
        return dict(self._workers[0].layers)

    @property
    def warmed_up(self) -> int:
        """Warm-up jobs that ran cleanly in each worker (the fewest over the workers)."""
        return min(worker.warmed_up for worker in self._workers)

    @property
    def size(self) -> int:
        """Number of workers (jobs that can run at once)."""
        return len(self._workers)

    @property
    def huge_pages(self) -> int:
        """2 MiB pages backing each worker's heap (the fewest over the workers); 0 without THP."""
        return min(worker.huge_pages for worker in self._workers)

    @property
    def redactions(self) -> dict[str, int]:
        """Secret values cut out of job results so far, per host variable name (redact.py)."""
        return self._redactor.counts

    def run(self, code: str, params: dict | None = None) -> ExecResult:
        return self._run_frame(_job_frame(code, params))

    def run_many(self, jobs) -> list[ExecResult]:
        """Run jobs (code strings or (code, params) pairs) on all workers at once, in order."""
        frames = [_job_frame(*((job,) if isinstance(job, str) else tuple(job))) for job in jobs]
        with ThreadPoolExecutor(max_workers=len(self._workers)) as executor:
            return list(executor.map(self._run_frame, frames))

    def _run_frame(self, job: dict) -> ExecResult:
        worker = self._idle.get()
        try:
            return worker.execute(job, self.limits, self._redactor)
        finally:
            self._idle.put(worker)

    def close(self) -> None:
        for worker in self._workers:
            worker.close()
        self._closed = True

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
