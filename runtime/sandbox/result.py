"""What a sandboxed run returns, and how a result value travels as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa

# The only values `ExecResult.error_class` takes (None when ok). Stable: callers
# (the gate funnel, rewards) count on them.
ERROR_CLASSES = (
    "SyntaxError",        # the code does not compile
    "Timeout",            # wall-clock limit reached; the job process was killed
    "MemoryLimit",        # address-space limit or DuckDB memory limit reached
    "CpuLimit",           # CPU-seconds limit reached (SIGXCPU / SIGKILL)
    "OutputLimit",        # too much stdout, too large a result, or a too large file
    "SecurityViolation",  # the code tried something the sandbox forbids
    "RuntimeError",       # the code raised (error_type names the exception)
    "NoResult",           # the code finished without assigning `result`
    "WorkerCrashed",      # the job process died or exited without reporting
)

PREVIEW_ROWS = 10
PREVIEW_CHARS = 2000


@dataclass(frozen=True, eq=False)
class ExecResult:
    """The outcome of one job; `layers` says which isolation layers were active."""

    ok: bool
    error_class: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    result_frame: pd.DataFrame | None = None
    result_rows: int = 0
    result_columns: tuple[str, ...] = ()
    result_preview: str = ""
    stdout_tail: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    api_calls: tuple[str, ...] = ()
    layers: dict[str, bool] = field(default_factory=dict)
    worker_slot: int = -1
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds per step, for profiling
    redacted: tuple[str, ...] = ()  # host variables whose values were cut out of this result (redact.py)

    def __post_init__(self) -> None:
        if self.error_class is not None and self.error_class not in ERROR_CLASSES:
            raise ValueError(f"unknown error class `{self.error_class}`")


def to_frame(value) -> pd.DataFrame:
    """Turn whatever agent code assigned to `result` into a DataFrame."""
    if isinstance(value, pd.DataFrame):
        return value
    if isinstance(value, pd.Series):
        return value.to_frame(name=value.name if value.name is not None else "result")
    if isinstance(value, dict):
        if value and all(pd.api.types.is_list_like(v) for v in value.values()):
            return pd.DataFrame(value)
        return pd.DataFrame([value])
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, dict) for v in value):
            return pd.DataFrame(list(value))
        return pd.DataFrame({"result": list(value)})
    if hasattr(value, "shape") and getattr(value, "ndim", 0) in (1, 2):  # numpy arrays
        return pd.DataFrame(value)
    if isinstance(value, (str, int, float, bool, complex, bytes)) or value is None or hasattr(value, "item"):
        return pd.DataFrame({"result": [value]})
    return pd.DataFrame({"result": [repr(value)[:1000]]})


def _plain_copy(frame: pd.DataFrame) -> pd.DataFrame:
    # Arrow refuses mixed-type object columns and non-string or duplicate names;
    # text is a faithful enough rendering for a tool message.
    plain = frame.astype(str)
    names, seen = [], {}
    for column in frame.columns:
        name = str(column)
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    plain.columns = names
    return plain.reset_index(drop=True)


def frame_to_bytes(frame: pd.DataFrame) -> bytes:
    """Serialize a frame as an Arrow IPC stream (single-threaded: job processes may not spawn threads)."""
    frame = frame.reset_index(drop=True)
    try:
        if not all(isinstance(c, str) for c in frame.columns) or frame.columns.duplicated().any():
            raise TypeError("column names")
        table = pa.Table.from_pandas(frame, preserve_index=False, nthreads=1)
    except (TypeError, ValueError, pa.ArrowException):
        table = pa.Table.from_pandas(_plain_copy(frame), preserve_index=False, nthreads=1)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def frame_from_bytes(payload: bytes) -> pd.DataFrame:
    with pa.ipc.open_stream(pa.py_buffer(payload)) as reader:
        return reader.read_all().to_pandas()


def render_preview(frame: pd.DataFrame | None, total_rows: int) -> str:
    """A short text rendering for a tool message."""
    if frame is None:
        return ""
    if total_rows == 1 and list(frame.columns) == ["result"]:
        text = str(frame.iloc[0, 0])
    else:
        text = frame.head(PREVIEW_ROWS).to_string(index=False, max_colwidth=40)
        text += f"\n[{total_rows} rows x {frame.shape[1]} columns]"
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 3] + "..."
