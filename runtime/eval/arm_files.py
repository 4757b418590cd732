"""An eval arm's episodes on disk: ``episodes/<arm>.jsonl``, one episode per line.

The file is written only when the arm has finished, through a temporary name and an
atomic rename, so a file under its own name is a whole arm. That is what lets an
interrupted eval step resume (the runner keeps its staging dir when its inputs are
unchanged): an arm whose file is there is read back, not decoded again, and an arm
cut off part-way left nothing under its name and starts over.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from craftc.atomic import write_atomic
from runtime.agent import Episode

__all__ = ["arm_file", "read_arm", "write_arm", "finished_arm", "without_run_to_run"]

# What differs between two decodings of the same arm on the same inputs, all else equal: how
# long each code block ran, and the addresses of objects its output printed.
_RUN_TO_RUN = re.compile(r'"wall_s": [0-9.e+-]+|0x[0-9a-f]+')


def arm_file(episodes_dir: Path, arm: str) -> Path:
    return episodes_dir / f"{arm}.jsonl"


def write_arm(episodes_dir: Path, arm: str, episodes: list[Episode]) -> Path:
    """Write the arm's episodes whole: a reader never sees part of an arm under its name."""
    path = arm_file(episodes_dir, arm)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, "".join(json.dumps(e.to_dict(), sort_keys=True) + "\n" for e in episodes))


def read_arm(path: Path) -> list[Episode]:
    """Episodes of one arm file (blank lines skipped); raises ValueError/TypeError/KeyError on a bad line."""
    return [Episode.from_dict(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def finished_arm(episodes_dir: Path, arm: str, instance_ids: list[str]) -> tuple[list[Episode] | None, str]:
    """The arm's episodes if an earlier, interrupted run of this step finished them, and why not otherwise.

    The episodes count only if they are those of ``instance_ids`` in that order: the
    runner kept the staging dir because the step's inputs are unchanged, so anything
    else means the file was damaged or edited, and the arm is decoded again.
    Returns ``(episodes, "")`` or ``(None, reason)``; the reason is "" when there is no file.
    """
    path = arm_file(episodes_dir, arm)
    if not path.is_file():
        return None, ""
    try:
        episodes = read_arm(path)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        return None, f"{path.name} does not read as episodes ({type(err).__name__}: {err})"
    if [e.instance_id for e in episodes] != list(instance_ids):
        return None, f"{path.name} holds {len(episodes)} episodes that are not this eval's {len(instance_ids)} instances"
    return episodes, ""


def without_run_to_run(text: str) -> str:
    """Episode JSON ``text`` without what differs run to run, to compare two decodings of an arm.

    >>> without_run_to_run('{"exec": {"ok": true, "wall_s": 0.012}, "output": "<obj at 0x7f3a>"}')
    '{"exec": {"ok": true, }, "output": "<obj at >"}'
    """
    return _RUN_TO_RUN.sub("", text)
