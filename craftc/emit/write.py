"""Writing a plan dir: atomically, and not at all when it already holds the plan.

The files are written into a temporary sibling directory that is then renamed into
place, so a reader sees either the previous plan dir or the complete new one, and a
failed write leaves the previous plan untouched. A plan dir that already holds exactly
the files to write (same names, bytes and modes, nothing else) is left as it is:
recompiling an unchanged recipe costs a read of the plan dir instead of writing and
deleting some seventy files, and the files keep their modification times.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from craftc.emit.errors import EmitError

__all__ = ["write_plan_files"]

_EXECUTABLE = ".sh"


def _mode(rel: str) -> int:
    return 0o755 if rel.endswith(_EXECUTABLE) else 0o644


def _refuse_foreign_dir(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise EmitError(f"`{out_dir}` exists and is not a directory; choose another output with `-o`")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / "plan.json").is_file():
        raise EmitError(f"`{out_dir}` is not empty and holds no plan.json, so it is not a plan dir; "
                        "refusing to replace it: choose another output with `-o`")


def _holds_exactly(out_dir: Path, files: Mapping[str, bytes]) -> bool:
    """Whether ``out_dir`` holds ``files`` (bytes and modes) and no other file or directory."""
    wanted_dirs: set[str] = set()
    for rel in files:
        parent = posixpath.dirname(rel)
        while parent and parent not in wanted_dirs:
            wanted_dirs.add(parent)
            parent = posixpath.dirname(parent)
    # plan.json first: it lists every other file's hash, so it differs whenever the plan does.
    order = sorted(files, key=lambda rel: rel != "plan.json")
    try:
        for rel in order:
            path = out_dir / rel
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or stat.S_IMODE(info.st_mode) != _mode(rel) \
                    or info.st_size != len(files[rel]) or path.read_bytes() != files[rel]:
                return False
        for root, dirs, names in os.walk(out_dir):
            rel_root = Path(root).relative_to(out_dir).as_posix()
            prefix = "" if rel_root == "." else rel_root + "/"
            if any(prefix + name not in files for name in names) or \
                    any(prefix + d not in wanted_dirs or os.path.islink(os.path.join(root, d)) for d in dirs):
                return False
    except OSError:
        return False
    return True


def write_plan_files(files: Mapping[str, bytes], out_dir: str | os.PathLike) -> Path:
    """Write ``files`` as the directory ``out_dir``, replacing a previous plan dir atomically
    (or leaving it alone when it already holds exactly these files)."""
    out_dir = Path(out_dir)
    _refuse_foreign_dir(out_dir)
    if out_dir.is_dir() and _holds_exactly(out_dir, files):
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".tmp", dir=out_dir.parent))
    try:
        made = {staging}
        for rel, data in files.items():
            path = staging / rel
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.update(path.parents)
            path.write_bytes(data)
            path.chmod(_mode(rel))
        staging.chmod(0o755)
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".old", dir=out_dir.parent))
            os.replace(out_dir, old / "plan")
            os.replace(staging, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir
