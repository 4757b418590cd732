"""`eval { processes 2 }`: the arms decode in two processes at once, and nothing is lost.

The smoke run's eval decoded its three arms one after another. The same plan with
`processes 2` decodes the stuffed arm in one process and craft and sft_only in another
(runtime/eval/processes.py); the step reads their episode files back. A kill -9 of the
step's process ends its eval processes too (the kernel's parent-death signal; the closed
pipe of their output would end them at their next line, so a process whose output is a
file shows the signal alone), and the rerun keeps the arms they finished. A process that
fails stops the step with its own message.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import psutil

from e2e_support import craftc, recipe_tree
from runtime.eval.arm_files import without_run_to_run

SMOKE_EVAL = "eval { instances 1  max_turns 2  limit 3 }"


def _side_by_side_plan(smoke_run, tmp_path):
    recipe = recipe_tree(tmp_path / "v2", "ads.craft")
    text = recipe.read_text()
    assert text.count(SMOKE_EVAL) == 1
    recipe.write_text(text.replace(SMOKE_EVAL, SMOKE_EVAL[:-1] + " processes 2 }"))
    plan = tmp_path / "plan_v2"
    compiled = craftc("compile", recipe, "-o", plan, "--profile", "smoke", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert json.loads((plan / "plan.json").read_text())["recipe"]["eval"]["processes"] == 2
    run_dir = tmp_path / "run"
    shutil.copytree(smoke_run.run_dir, run_dir)
    shutil.rmtree(run_dir / "eval")
    return plan, run_dir


def _episodes(run_dir):
    """Each arm's episode file, without what differs between any two runs: how long code ran,
    and the addresses of objects its output printed."""
    return {p.name: without_run_to_run(p.read_text())
            for p in sorted((run_dir / "eval/episodes").glob("*.jsonl"))}


def test_two_processes_decode_the_arms_side_by_side_into_the_same_episodes(smoke_run, tmp_path):
    plan, run_dir = _side_by_side_plan(smoke_run, tmp_path)
    ran = craftc("run", plan, "--run-dir", run_dir, "--only", "eval", cwd=tmp_path)
    out = ran.stdout + ran.stderr
    assert ran.returncode == 0, out[-3000:]
    # The dearest arm (the schema in its prompt) alone, the two stripped arms together.
    assert "eval: stuffed and craft+sft_only decode at the same time" in out
    assert "[stuffed] eval: arm stuffed on" in out and "[craft+sft_only] eval: arm sft_only on" in out
    assert "read back, not decoded again" not in out         # not mistaken for an interrupted run
    # The smoke model's products are small enough that one thread or two, strict or not, give
    # the same floats: the episodes and every score are those of the one-process eval.
    assert _episodes(run_dir) == _episodes(smoke_run.run_dir)
    assert json.loads((run_dir / "eval/eval.json").read_text()) == \
        json.loads((smoke_run.run_dir / "eval/eval.json").read_text())


def _eval_processes(out_dir):
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "runtime.eval.arm_process" in cmdline and str(out_dir) in cmdline:
            found.append(proc)
    return found


def test_a_kill_of_the_step_takes_its_eval_processes_and_keeps_their_finished_arms(smoke_run, tmp_path):
    plan, run_dir = _side_by_side_plan(smoke_run, tmp_path)
    staging = run_dir / ".tmp-eval"
    first = staging / "episodes/craft.jsonl"        # craft+sft_only's first arm, the quickest
    command = [sys.executable, "-m", "craftc.cli", "run", str(plan), "--run-dir", str(run_dir), "--only", "eval"]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first.exists(), "craft never finished before the kill"
        assert _eval_processes(staging.resolve()), "no eval process was running"
        os.kill(proc.pid, signal.SIGKILL)           # the step's process alone, not its group
        proc.wait()
        deadline = time.monotonic() + 30
        while _eval_processes(staging.resolve()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _eval_processes(staging.resolve()), "an eval process outlived the step"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not (run_dir / "eval").exists()
    assert not (staging / "episodes/stuffed.jsonl").exists(), "the kill came too late to test"
    saved = first.read_text()

    rerun = craftc("run", plan, "--run-dir", run_dir, "--only", "eval", cwd=tmp_path)
    out = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, out[-3000:]
    assert "eval: arm craft: its" in out and "read back, not decoded again" in out
    assert "eval: stuffed and sft_only decode at the same time" in out     # craft is not decoded again
    assert (run_dir / "eval/episodes/craft.jsonl").read_text() == saved
    assert _episodes(run_dir) == _episodes(smoke_run.run_dir)


def test_an_eval_process_that_fails_stops_the_step_with_its_own_message(smoke_run, tmp_path):
    plan, run_dir = _side_by_side_plan(smoke_run, tmp_path)
    (run_dir / "sft/stuffed/final/config.json").unlink()       # the stuffed arm's model is broken
    ran = craftc("run", plan, "--run-dir", run_dir, "--only", "eval", cwd=tmp_path)
    out = ran.stdout + ran.stderr
    assert ran.returncode != 0
    assert "eval process `stuffed` failed with exit code 2" in out, out[-3000:]
    assert "the sft step left no `stuffed` model" in out and "rerun `craftc run PLAN --only sft`" in out
    assert "Traceback" not in out
    assert not (run_dir / "eval").exists()


# A parent that starts one eval process with its output in a file, not a pipe, says the
# process's pid, and waits: killed, it leaves nothing that would end the process at its
# next line, so only the parent-death signal can.
_PARENT = """
import subprocess, sys
with open(sys.argv[1], "w") as log:
    child = subprocess.Popen(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
print(child.pid, flush=True)
child.wait()
"""


def test_an_eval_process_whose_output_is_not_a_pipe_dies_with_the_step_that_started_it(smoke_run, tmp_path):
    plan, run_dir = _side_by_side_plan(smoke_run, tmp_path)
    staging, log = run_dir / ".tmp-eval", tmp_path / "arm_process.log"
    (staging / "episodes").mkdir(parents=True)
    command = [sys.executable, "-m", "runtime.eval.arm_process", "--plan-dir", str(plan), "--run-dir", str(run_dir),
               "--out-dir", str(staging), "--seed", "0", "--replicate", "0", "--replicates", "1",
               "stuffed", "craft", "sft_only"]
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(log), *command], cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    child = psutil.Process(int(parent.stdout.readline()))
    try:
        # Its first line comes after it asked for the signal: the kill below cannot come before.
        deadline = time.monotonic() + 300
        while not log.read_text() and child.is_running() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert log.read_text(), "the eval process printed nothing"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(child), "the eval process outlived the step that started it"
        assert not (staging / "episodes/sft_only.jsonl").exists(), "the kill came too late to test"
    finally:
        if _alive(child):
            child.kill()


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
