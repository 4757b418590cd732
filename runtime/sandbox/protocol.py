"""Length-prefixed frames over pipes: a JSON header plus an opaque byte payload.

Nothing here uses pickle on purpose: the bytes that reach the host were produced
next to untrusted agent code, and unpickling them would hand that code the host.
JSON and Arrow IPC are plain data formats with no code execution on load.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

_LEN = struct.Struct(">II")  # header length, payload length


class FrameError(Exception):
    """The peer closed the pipe, sent garbage, or sent more than it may."""


class FrameTimeout(FrameError):
    """No complete frame arrived before the deadline."""


def write_frame(fd: int, header: dict, payload: bytes = b"") -> None:
    body = json.dumps(header, default=str).encode()
    data = _LEN.pack(len(body), len(payload)) + body + payload
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    chunks, missing = [], size
    while missing:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise FrameTimeout("no reply before the deadline")
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            raise FrameError("the other side closed the pipe")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None, max_bytes: int = 1 << 30) -> tuple[dict, bytes]:
    """Read one frame; `deadline` is a time.monotonic() value, `max_bytes` caps the total."""
    head_len, payload_len = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    if head_len + payload_len > max_bytes:
        raise FrameError(f"frame of {head_len + payload_len} bytes exceeds the cap of {max_bytes}")
    try:
        header = json.loads(_read_exact(fd, head_len, deadline))
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"unreadable frame header: {exc}") from None
    if not isinstance(header, dict):
        raise FrameError("frame header is not a JSON object")
    return header, _read_exact(fd, payload_len, deadline)
