"""Resource limits for one sandboxed job, validated up front."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from types import MappingProxyType

# The whole environment a sandbox worker starts with, and every job process runs
# with: nothing of the host's environment is passed on, since that is where API
# keys live (a teacher's `api_key_env`). The thread counts are 1 because a job
# process may not start threads (RLIMIT_NPROC). `job_environment` adds TMPDIR and
# HOME (docs/sandbox.md, "The environment").
JOB_ENVIRONMENT = MappingProxyType({
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
})


def job_environment(private_dir: str) -> dict[str, str]:
    """The environment of a process whose temp dir and home are `private_dir`.

    Example:
        >>> sorted(job_environment("/tmp/job-1"))[:3]
        ['HOME', 'LANG', 'LC_ALL']
    """
    return {**JOB_ENVIRONMENT, "TMPDIR": private_dir, "HOME": private_dir}


class SandboxError(ValueError):
    """Bad configuration or a worker that cannot start; the message names the fix."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every job a pool runs.

    Example:
        >>> SandboxLimits(wall_timeout_s=2.0).memory_mb
        1024
    """

    wall_timeout_s: float = 10.0       # parent kills the job process after this
    cpu_s: int = 10                    # RLIMIT_CPU (soft; hard is one second more)
    memory_mb: int = 1024              # RLIMIT_AS headroom above the forked image, DuckDB memory_limit
    max_stdout_chars: int = 4000       # tail of stdout/stderr kept in the result
    max_stdout_total_chars: int = 2_000_000  # printing more than this is an OutputLimit
    max_result_rows: int = 1000        # rows of the result frame sent back (true count is kept)
    max_result_bytes: int = 8 << 20    # serialized result frame larger than this is an OutputLimit
    max_file_mb: int = 16              # RLIMIT_FSIZE for files written in the private temp dir
    max_open_files: int = 64           # RLIMIT_NOFILE
    drop_privileges: bool = True       # when root: run each job under its own unprivileged uid
    sandbox_uid_base: int = 64000      # job uid = base + worker slot (distinct uids cannot signal each other)
    audit_hook: bool = True            # off only to test that the kernel layers hold on their own
    jobs_per_process: int = 1          # 1: a fresh process per job; N: up to N jobs per process (trusted code only)
    # Host variables whose values are redacted from what jobs send back, beyond the
    # secret-looking names (runtime.sandbox.redact); names only, never values.
    secret_env: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problems = []
        object.__setattr__(self, "secret_env", _names(self.secret_env, problems))
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name == "secret_env":
                continue
            if field.type == "bool":
                if not isinstance(value, bool):
                    problems.append(f"`{field.name}` must be true or false, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                problems.append(f"`{field.name}` must be a positive number, got {value!r}")
        if not isinstance(self.jobs_per_process, int):
            problems.append(f"`jobs_per_process` must be a whole number, got {self.jobs_per_process!r}")
        if problems:
            raise SandboxError("invalid sandbox limits: " + "; ".join(problems))

    def to_dict(self) -> dict:
        return asdict(self)


def _names(value, problems: list[str]) -> tuple[str, ...]:
    # JSON (the worker's copy) turns the tuple into a list.
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or not all(
            isinstance(name, str) and name for name in value):
        problems.append(f"`secret_env` must be a list of environment variable names, got {value!r}")
        return ()
    return tuple(value)
