"""A kill -9 in the middle of eval loses only the arm it was decoding.

The eval step saves each arm's episodes as the arm finishes (runtime/eval/arm_files.py)
and the runner keeps eval's staging dir when its inputs are unchanged, so the rerun
reads the finished arms back and decodes only the rest, and ends with what an
uninterrupted eval gives.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from e2e_support import craftc


def _arms_and_episodes(run_dir):
    arms = json.loads((run_dir / "eval/eval.json").read_text())["arms"]
    return arms, {arm: (run_dir / f"eval/episodes/{arm}.jsonl").read_text() for arm in arms}


def test_eval_killed_after_its_first_arm_decodes_only_the_others_on_rerun(smoke_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(smoke_run.run_dir, run_dir)
    arms, uninterrupted = _arms_and_episodes(smoke_run.run_dir)
    assert len(arms) >= 2
    shutil.rmtree(run_dir / "eval")
    first = run_dir / ".tmp-eval/episodes" / f"{arms[0]}.jsonl"

    command = [sys.executable, "-m", "craftc.cli", "run", str(smoke_run.plan), "--run-dir", str(run_dir),
               "--only", "eval"]
    proc = subprocess.Popen(command, cwd=smoke_run.work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 900
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)        # the step's process and its sandbox workers, at once
    proc.wait()
    assert first.exists(), "the first arm never finished before the kill"
    assert not (run_dir / "eval").exists()
    assert not (run_dir / ".tmp-eval/episodes" / f"{arms[1]}.jsonl").exists(), "the kill came too late to test"
    saved = first.read_text()

    rerun = craftc("run", smoke_run.plan, "--run-dir", run_dir, "--only", "eval", cwd=smoke_run.work)
    out = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, out[-3000:]
    assert "eval: resuming the interrupted run" in out
    assert f"eval: arm {arms[0]}: its" in out and "read back, not decoded again" in out
    assert f"eval: arm {arms[0]} on" not in out                 # not decoded a second time
    assert all(f"eval: arm {arm} on" in out for arm in arms[1:])
    resumed_arms, resumed = _arms_and_episodes(run_dir)
    assert resumed[arms[0]] == saved
    # What an eval run whole gives: the same episodes for every arm, and the same scores.
    assert resumed_arms == arms and resumed == uninterrupted
    assert json.loads((run_dir / "eval/eval.json").read_text()) == \
        json.loads((smoke_run.run_dir / "eval/eval.json").read_text())
    manifest = json.loads((run_dir / "eval/manifest.json").read_text())
    assert not any(Path(f["path"]).name.startswith(".") for f in manifest["outputs"])   # no temporaries, no marker
