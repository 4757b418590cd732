"""Temp git repositories and a `craftc` on PATH that runs this checkout's compiler."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "examples" / "hello"


# Commits in temp repositories must not depend on the machine's git configuration.
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "craft tests", "GIT_AUTHOR_EMAIL": "tests@example.com",
                "GIT_COMMITTER_NAME": "craft tests", "GIT_COMMITTER_EMAIL": "tests@example.com"}


def craftc_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose `craftc` is this checkout's, whatever is installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "craftc"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m craftc.cli "$@"\n')
    shim.chmod(0o755)
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": pythonpath,
            "NO_COLOR": "1", **GIT_IDENTITY}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, capture_output=True, text=True,
                          check=True, env={**os.environ, **GIT_IDENTITY})
    return done.stdout


def repo_with_hello(root: Path, folder: str = "recipes") -> Path:
    """A git repository holding the hello recipe, its schema and solution under FOLDER, committed."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(HELLO, root / folder)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hello")
    return root
