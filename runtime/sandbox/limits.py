"""Resource limits for one sandboxed job, validated up front."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


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

    def __post_init__(self) -> None:
        problems = []
        for field in fields(self):
            value = getattr(self, field.name)
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
