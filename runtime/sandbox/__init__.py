"""Isolated execution of agent code against a read-only DuckDB warehouse.

See docs/sandbox.md for the isolation layers and what each one guarantees.
"""

from .limits import JOB_ENVIRONMENT, SandboxError, SandboxLimits
from .pool import SandboxPool
from .result import ERROR_CLASSES, ExecResult
from .sizing import sandbox_workers

__all__ = ["ERROR_CLASSES", "ExecResult", "JOB_ENVIRONMENT", "SandboxError", "SandboxLimits", "SandboxPool",
           "sandbox_workers"]
