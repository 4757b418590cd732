"""Cores a finished arm frees go to the arm still training (runtime.train.core_share)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import torch

from runtime.train.core_share import core_share_callback, read_share, write_share
from runtime.train.launch import run_launches


def test_the_share_file_holds_one_positive_whole_number(tmp_path):
    share = tmp_path / "threads"
    assert read_share(share) is None                     # no file yet
    write_share(share, 2)
    assert read_share(share) == 2
    share.write_text("lots\n")
    assert read_share(share) is None
    share.write_text("0\n")
    assert read_share(share) is None


def test_a_trainer_takes_the_new_share_at_its_next_step_and_records_it(tmp_path):
    share, changes = tmp_path / "threads", []
    before = torch.get_num_threads()
    other = 2 if before != 2 else 1
    try:
        write_share(share, before)
        callback = core_share_callback(share, "main", changes)
        callback.on_step_begin(None, SimpleNamespace(global_step=0), None)
        assert changes == [] and torch.get_num_threads() == before     # the same share: nothing to do
        write_share(share, other)
        callback.on_step_begin(None, SimpleNamespace(global_step=7), None)
        assert torch.get_num_threads() == other
        assert changes == [{"phase": "main", "step": 7, "threads": other}]
        callback.on_step_begin(None, SimpleNamespace(global_step=8), None)
        assert len(changes) == 1                                        # read once per change
    finally:
        torch.set_num_threads(before)


def test_a_trainer_without_a_share_file_keeps_its_threads(tmp_path):
    changes, before = [], torch.get_num_threads()
    core_share_callback(tmp_path / "absent", "warm-up", changes).on_step_begin(None, SimpleNamespace(global_step=3), None)
    assert changes == [] and torch.get_num_threads() == before


def test_the_launcher_says_who_still_runs_when_one_launch_finishes(tmp_path):
    # The slow launch waits for a file that only the exit callback writes: it ends
    # cleanly only if the callback ran while it was still running.
    marker = tmp_path / "freed"
    slow = [sys.executable, "-c",
            f"import pathlib, time; m = pathlib.Path({str(marker)!r}); t = time.time()\n"
            "while not m.exists() and time.time() - t < 20: time.sleep(0.05)\n"
            "print('freed', m.exists())"]
    calls = []

    def on_exit(name, running):
        calls.append((name, running))
        marker.touch()

    run_launches({"craft": [sys.executable, "-c", "print('done')"], "stuffed": slow}, on_exit=on_exit)
    assert calls == [("craft", ["stuffed"])]


GRADIENTS_ON_1_AND_2_THREADS = """
import sys, torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
ids = torch.randint(5, model.config.vocab_size, (1, 2000), generator=torch.Generator().manual_seed(0))
grads = []
for threads in (1, 2):
    torch.set_num_threads(threads)
    model.zero_grad()
    model(input_ids=ids, labels=ids).loss.backward()
    grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
print("same bits" if all(torch.equal(a, b) for a, b in zip(*grads)) else "different bits")
"""


def test_with_mkls_strict_mode_a_trainers_gradients_do_not_depend_on_its_thread_count(tiny_model_dir):
    """Why a freed core may be handed over mid-run: the launcher sets this mode, and the
    trained model is then the same whenever the other arm finished. (Without it, 2,000
    tokens through this model give gradients that differ in the last bits on this machine.)"""
    import os
    import subprocess

    from runtime.train.launch import MKL_REPRODUCIBLE, thread_count_free_floats

    assert thread_count_free_floats()       # this machine's torch uses MKL: the handover is on
    env = {**os.environ, MKL_REPRODUCIBLE[0]: MKL_REPRODUCIBLE[1]}
    out = subprocess.run([sys.executable, "-c", GRADIENTS_ON_1_AND_2_THREADS, str(tiny_model_dir)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "same bits", out.stderr[-2000:]


def test_a_launch_can_get_variables_of_its_own(capsys):
    """How only the arm that takes freed cores gets the share file and MKL's strict mode."""
    show = [sys.executable, "-c", "import os; print(os.environ.get('MKL_CBWR', 'unset'))"]
    run_launches({"craft": show, "stuffed": show}, extra_env={"stuffed": {"MKL_CBWR": "AUTO,STRICT"}})
    out = capsys.readouterr().out
    assert "[craft] unset" in out and "[stuffed] AUTO,STRICT" in out
