"""Writing a file or a directory so that nobody ever reads it half-written.

The new content goes to a temporary sibling, which is renamed over the target only
when it is complete: a crash leaves the old content (or nothing), never a mix.

The steps of ``craftc run`` do not need this: the runner builds each step in a
temporary directory and renames the whole directory into place (`runtime.runner`).
A step that resumes in that directory after a kill (sft, grpo, eval) does use it for
the files it reads back, and the runner clears the temporaries a kill left there
(:func:`remove_leftovers`).
These helpers are for what is written outside that staging: the plan dir, caches,
formatted and imported sources, the runner's own records, exports, and trainers that
a user launches by hand straight into a run dir.

Example:
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> write_atomic(root / "a.txt", "one\\n").read_text()
    'one\\n'
    >>> with staged_dir(root / "model") as tmp:
    ...     _ = (tmp / "config.json").write_text("{}")
    >>> sorted(p.name for p in root.iterdir())
    ['a.txt', 'model']
    >>> shutil.rmtree(root)
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["write_atomic", "open_atomic", "replace_dir", "staged_dir", "remove_leftovers"]


def _sibling(path: Path, kind: str) -> Path:
    """A hidden, unused name next to ``path``."""
    return path.with_name(f".{path.name}.{os.urandom(4).hex()}.{kind}")


# What `_sibling` names a temporary file: a process killed mid-write leaves one behind.
_TEMPORARY = re.compile(r"^\..+\.[0-9a-f]{8}\.tmp$")


def remove_leftovers(root: str | os.PathLike) -> list[Path]:
    """Delete the half-written temporary files a killed writer left under ``root``; returns them.

    For a directory whose finished files are kept and read again (a resumed step's
    staging dir): the temporaries are never read, and left there they would count as
    outputs. Their targets are untouched: an interrupted write left the old content.
    """
    found = [p for p in Path(root).rglob(".*.tmp") if p.is_file() and _TEMPORARY.match(p.name)]
    for path in found:
        path.unlink(missing_ok=True)
    return found


@contextmanager
def open_atomic(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """A file handle whose content replaces ``path`` when the block ends without an error.

    ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"``. The parent directory is created.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"open_atomic writes with mode 'w' or 'wb', not {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(path, "tmp")
    # 0o666 less the umask, as a plain open() would give (mkstemp's 0o600 would not).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically; returns ``path``."""
    with open_atomic(path, "wb" if isinstance(data, bytes) else "w") as handle:
        handle.write(data)
    return Path(path)


def replace_dir(staging: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Put the complete directory ``staging`` in the place of ``target``.

    An existing ``target`` is moved aside first and removed only once the new one is in
    place, so a crash in between leaves it recoverable next to the target.
    """
    staging, target = Path(staging), Path(target)
    if target.exists():
        old = _sibling(target, "old")
        os.replace(target, old)
        os.replace(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, target)
    return target


@contextmanager
def staged_dir(target: str | os.PathLike) -> Iterator[Path]:
    """A fresh temporary sibling of ``target`` that replaces it when the block ends without an error."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(target, "tmp")
    staging.mkdir()
    try:
        yield staging
        replace_dir(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
