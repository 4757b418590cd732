"""`stage NAME { checkpoint_every 10m }`: checkpoints by training time as well as by steps.

A pretrained model's SFT on CPU takes seconds a step, so TRL's every-500-steps saves would
come only at the end of a few hundred steps and a kill would lose them all. The setting
compiles into the stage (tests/compiler/test_checkpoint_every_setting.py), the sft step
writes it into each arm's step config, and every phase's trainer saves once that much
training time has passed; a save draws nothing, so the weights are those of a run that
never saved.
"""

from __future__ import annotations

import json
import shutil

import pytest

from craftc.ir import GRPOStage
from runtime.train.masking import ASSISTANT_ONLY
from runtime.train.sft import train_sft
from test_sft import LORA, SHORT

# No step-count save within the run: every checkpoint below is a timed one.
NO_STEP_SAVES = {**SHORT, "max_steps": 4, "save_steps": 1000, "save_total_limit": 10}


def _checkpoints(out):
    return sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))


def test_a_phase_saves_by_training_time_and_trains_the_same_weights(tiny_model_dir, dataset_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    # A clock interval far below a step: a save at every step end.
    timed = train_sft(tiny_model_dir, dataset_dir, tmp_path / "timed", NO_STEP_SAVES, ASSISTANT_ONLY,
                      checkpoint_every_s=1e-9)
    plain = train_sft(tiny_model_dir, dataset_dir, tmp_path / "plain", NO_STEP_SAVES, ASSISTANT_ONLY)
    assert _checkpoints(tmp_path / "timed") == [1, 2, 3, 4]
    assert _checkpoints(tmp_path / "plain") == [4]            # TRL's save at the end only
    assert timed["last_loss"] == plain["last_loss"]
    a = AutoModelForCausalLM.from_pretrained(tmp_path / "timed" / "final").state_dict()
    b = AutoModelForCausalLM.from_pretrained(tmp_path / "plain" / "final").state_dict()
    assert all(torch.equal(a[name], b[name]) for name in b)


def test_a_run_killed_after_a_timed_save_resumes_from_it(tiny_model_dir, dataset_dir, tmp_path):
    out = tmp_path / "out"
    train_sft(tiny_model_dir, dataset_dir, out, {**NO_STEP_SAVES, "max_steps": 2}, ASSISTANT_ONLY,
              checkpoint_every_s=1e-9)
    # As if killed after step 2 of 4: the final model goes, the timed checkpoints stay.
    for name in ("final", "checkpoint-1"):
        shutil.rmtree(out / name)
    resumed = train_sft(tiny_model_dir, dataset_dir, out, NO_STEP_SAVES, ASSISTANT_ONLY)
    assert resumed["resumed_from"] == "checkpoint-2" and resumed["steps"] == 4


@pytest.mark.parametrize("every, callbacks", [(600.0, 1), (0.0, 0)])
def test_grpo_saves_by_training_time_as_its_stage_says(every, callbacks):
    from types import SimpleNamespace

    from runtime.train.grpo.trainer import _callbacks
    from runtime.train.timed_checkpoints import TimeSinceSave

    assert GRPOStage.model_fields["checkpoint_every_s"].default == 600.0
    job = SimpleNamespace(stage={"measure_every": 0, "checkpoint_every_s": every})
    found = _callbacks(job, measure_policy=None) or []
    assert len(found) == callbacks and all(isinstance(c, TimeSinceSave) for c in found)
    if found:
        assert found[0].every_s == every


def test_two_ddp_processes_save_at_the_same_steps(tiny_model_dir, dataset_dir, tmp_path):
    """Each process reads its own clock; the decision is shared, or a collective save would hang."""
    from runtime.train.launch import launch_env, run_launch, stage_command
    from test_launch import CPU_DDP_SFT, _hello_plan

    plan = _hello_plan(tmp_path, CPU_DDP_SFT)
    config = tmp_path / "step" / "sft.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"model_dir": str(tiny_model_dir), "dataset_dir": str(dataset_dir),
                                  "out_dir": "out", "trl_overrides": {"save_steps": 1000},
                                  "checkpoint_every_s": 1e-9}))
    run_launch(stage_command(plan / "stages" / "sft" / "launch.sh", config), cwd=str(tmp_path), env=launch_env())
    out = config.parent / "out"
    assert json.loads((out / "sft_summary.json").read_text())["world_size"] == 2
    assert _checkpoints(out)[-2:] == [2, 3]       # a save at every step end (save_total_limit 2 keeps two)


def _agree(rank: int, store: str, results: str) -> None:
    import torch.distributed as dist

    from runtime.train.timed_checkpoints import _due_on_any_rank

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        # Only rank 0's clock says a save is due.
        with open(f"{results}.{rank}", "w") as fh:
            fh.write(str(_due_on_any_rank(rank == 0, "cpu")))
    finally:
        dist.destroy_process_group()


def test_a_save_due_on_one_process_is_due_on_all(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_agree, args=(str(tmp_path / "store"), str(tmp_path / "due")), nprocs=2, join=True)
    assert [(tmp_path / f"due.{rank}").read_text() for rank in (0, 1)] == ["True", "True"]


@pytest.mark.parametrize("killed_after, peft", [(2, None), (4, None), (2, LORA), (4, LORA)],
                         ids=["step-2", "last-step", "lora-step-2", "lora-last-step"])
def test_a_run_resumed_from_a_checkpoint_trains_the_weights_of_one_never_killed(tiny_model_dir, dataset_dir,
                                                                                tmp_path, killed_after, peft):
    # The resumed run must start from the checkpoint's weights, every one of them: tiny_moe's
    # experts are saved per expert and held fused, which a plain state-dict load leaves out.
    # Killed after the last step's save (while merging or summing up), it must train no more.
    import torch
    from transformers import AutoModelForCausalLM

    whole = train_sft(tiny_model_dir, dataset_dir, tmp_path / "whole", NO_STEP_SAVES, ASSISTANT_ONLY,
                      checkpoint_every_s=1e-9, peft_kwargs=peft)
    out = tmp_path / "killed"
    shutil.copytree(tmp_path / "whole", out)
    for name in ["final", *(f"checkpoint-{n}" for n in range(killed_after + 1, 5))]:
        shutil.rmtree(out / name)
    resumed = train_sft(tiny_model_dir, dataset_dir, out, NO_STEP_SAVES, ASSISTANT_ONLY, peft_kwargs=peft)
    assert resumed["resumed_from"] == f"checkpoint-{killed_after}" and resumed["steps"] == 4
    assert max(_checkpoints(out)) == 4          # no step past the plan's 4
    a = AutoModelForCausalLM.from_pretrained(out / "final").state_dict()
    b = AutoModelForCausalLM.from_pretrained(tmp_path / "whole" / "final").state_dict()
    assert a.keys() == b.keys()
    differ = [name for name in b if not torch.equal(a[name], b[name])]
    assert not differ, differ
    assert resumed["last_loss"] == whole["last_loss"]
