"""GRPO on a tiny real model: multi-turn rollouts in the real sandbox, the composite reward."""

import json

import pytest

from runtime.train.grpo import GRPOJob, GRPOSetupError, main, train_grpo
from tests.agent.warehouse import task_dict
from tests.train.train_support import craft_head_calls

WEIGHTS = {"outcome": 0.5, "process": 0.2, "consistency": 0.2, "judge": 0.1}
# The CPU GRPOConfig keywords `craftc compile` writes into a grpo stage's trl_config.json.
TRL = {"learning_rate": 1e-4, "max_steps": 3, "num_generations": 2, "per_device_train_batch_size": 2,
       "max_completion_length": 16, "temperature": 1.0, "beta": 0.0, "logging_steps": 1, "save_strategy": "steps",
       "save_steps": 50, "save_total_limit": 2, "seed": 0, "data_seed": 0, "use_cpu": True, "bf16": False,
       "fp16": False, "activation_checkpointing": False, "report_to": "none", "dataloader_num_workers": 0,
       "disable_tqdm": True, "reward_weights": list(WEIGHTS.values())}
STAGE = {"group": 2, "max_turns": 2, "max_new_tokens": 16, "temperature": 1.0, "history": "policy", "measure": 2,
         "per_device_batch": 2}
PLAIN = {"wording": {"user": "{ask}", "tool": "Output of the CODE block:\n{output}"},
         "fmt": {"think": "THINK", "plan": "PLAN", "code": "CODE", "answer": "ANSWER"}, "workers": 2, "secret_env": [], "seed": 0}


def tiny_job(root, warehouse, tiny_model, penalties: dict | None = None, **settings) -> GRPOJob:
    """A GRPO job on the tiny model (saved as its SFT model under ``root``) and two training
    instances; ``settings`` replace GRPOJob's fields (stage, trl, peft, measure_instances, ...)."""
    model, tok = tiny_model
    model.save_pretrained(root / "sft")
    tok.save_pretrained(root / "sft")
    (root / "train.json").write_text(json.dumps([task_dict(n, f"i{n}") for n in (2, 3)]))
    return GRPOJob(**{"model_dir": str(root / "sft"), "instances": str(root / "train.json"),
                      "warehouse": str(warehouse), "out_dir": str(root / "out"),
                      "system_prompt": "Answer with THINK, PLAN, CODE.",
                      "reward": {"weights": WEIGHTS, "aggregate": "sum", "penalties": penalties or {},
                                 "step_rewards": True},
                      "stage": STAGE, "trl": TRL, **PLAIN, **settings})


@pytest.fixture(scope="module")
def trained(tmp_path_factory, warehouse, tiny_model):
    job = tiny_job(tmp_path_factory.mktemp("grpo"), warehouse, tiny_model, penalties={"select_star": 0.05})
    with craft_head_calls() as head_calls:
        summary = train_grpo(job)
    return job, {**summary, "head_calls": head_calls}


def test_logged_reward_is_the_weighted_sum_of_logged_components(trained):
    job, _ = trained
    lines = [json.loads(l) for l in open(f"{job.out_dir}/metrics.jsonl")]
    steps = [l for l in lines if "reward" in l]
    assert len(steps) == 3
    for entry in steps:
        weighted = sum(w * entry[f"rewards/{c}/mean"] for c, w in WEIGHTS.items())
        assert entry["reward"] == pytest.approx(weighted, abs=1e-5)
        assert "exec_success" in entry


def test_completions_are_scored_through_crafts_cpu_head(trained):
    # runtime.train.loss_head, at the trainer's temperature: every log-prob GRPO computes
    # for a loss comes from the head that projects only the completions' positions.
    _, summary = trained
    assert summary["head_calls"] == ["craft"] * summary["steps"]     # one loss forward per step (one batch), never TRL's


def test_summary_reports_before_and_after_and_saves_a_model(trained):
    job, summary = trained
    assert summary["steps"] == 3
    for when in ("before", "after", "before_sampled", "after_sampled"):
        assert set(summary[when]) >= {"total", "exec_success", "outcome", "process", "consistency", "judge"}
    assert summary["sampled_per_row"] == 2 and summary["measured_rows"] == 2
    assert (tmp := __import__("pathlib").Path(job.out_dir) / "final" / "config.json").is_file(), tmp
    assert "reward_total.png" in summary["plots"]


def test_summary_warns_when_completions_cannot_hold_the_reference_turns(trained):
    # The fixture keeps rollouts short (16 tokens) to stay fast; the run says so.
    _, summary = trained
    room = summary["completion_room"]
    assert room["max_new_tokens"] == 16 and room["median_reference_tokens"] > 16
    assert room["share_cut_off"] == 1.0 and "raise `max_new_tokens`" in room["warning"]


def test_rollouts_are_multi_turn(trained):
    job, _ = trained
    lines = [json.loads(l) for l in open(f"{job.out_dir}/metrics.jsonl")]
    # An untrained model never closes a CODE block, so each of the conversation's two user
    # turns uses its repair call too: 4 model calls per rollout.
    assert all(l["model_calls"] == 4.0 for l in lines if "model_calls" in l)


def test_every_instance_is_a_row_and_the_summary_counts_them_per_workflow(trained):
    _, summary = trained
    assert summary["rows"] == 2 and summary["history"] == "policy"
    assert summary["rows_per_workflow"] == {"top_budget": 2}
    assert summary["turns_per_workflow"] == {"top_budget": 4}
    # 3 steps, each one prompt x a group of 2 completions (per_device_train_batch_size 2)
    assert summary["rollouts_per_workflow"] == {"top_budget": 6}


def test_without_dynamic_sampling_each_steps_flat_groups_are_counted_and_none_replaced(trained):
    _, summary = trained
    # An untrained model never runs code: each step's one group fails in every rollout, gives
    # no gradient, and is counted; with 0 rounds nothing is rolled out in its place (6 rollouts
    # in all, above).
    dynamic = summary["dynamic_sampling"]
    assert dynamic["rounds"] == 0
    assert dynamic["per_step"] == [{"groups": 1, "dropped": 0, "replaced": 0, "flat_after": 1}] * 3
    assert (dynamic["groups"], dynamic["flat_after"]) == (3, 3)


def test_training_resumes_from_the_last_checkpoint(trained):
    job, _ = trained
    job.trl = {**job.trl, "max_steps": 4}
    summary = train_grpo(job)
    assert summary["steps"] == 4
    lines = [json.loads(l) for l in open(f"{job.out_dir}/metrics.jsonl")]
    assert [l["step"] for l in lines if "reward" in l] == [1, 2, 3, 4]


def test_a_run_resumed_at_its_last_step_trains_no_more(trained):
    # A run killed after its training (measuring after, saving) resumes from the checkpoint
    # of its last step: transformers would train one step more from it, with new rollouts.
    job, _ = trained
    done = json.loads(open(f"{job.out_dir}/grpo_summary.json").read())["steps"]
    job.trl = {**job.trl, "max_steps": done}
    summary = train_grpo(job)
    assert summary["steps"] == done
    lines = [json.loads(l) for l in open(f"{job.out_dir}/metrics.jsonl")]
    assert [l["step"] for l in lines if "reward" in l] == list(range(1, done + 1))


def test_measure_0_measures_nothing(tmp_path, warehouse, tiny_model, monkeypatch):
    import runtime.train.grpo.trainer as trainer_module

    calls = []
    monkeypatch.setattr(trainer_module, "measure", lambda *args, **kwargs: calls.append(kwargs))
    job = tiny_job(tmp_path, warehouse, tiny_model, stage={**STAGE, "measure": 0},
                   trl={**TRL, "max_steps": 1})
    summary = train_grpo(job)
    assert calls == [] and summary["steps"] == 1 and summary["measured_rows"] == 0
    assert all(summary[k] is None for k in ("before", "after", "before_sampled", "after_sampled", "change"))
    assert summary["curve"] == [] and "measured_score.png" not in summary["plots"]
    assert not (tmp_path / "out" / "measured_before.json").exists() and (tmp_path / "out" / "final").is_dir()


def test_bad_config_names_the_problem(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"model_dir": "x", "oops": 1}))
    assert main(["--plan-dir", str(tmp_path / "no_plan"), "--stage", "grpo", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "cannot read the GRPO job from plan" in err and "no_plan" in err


def test_missing_model_is_a_setup_error(tmp_path, warehouse):
    job = GRPOJob(model_dir=str(tmp_path / "none"), instances="x", warehouse=str(warehouse),
                  out_dir=str(tmp_path / "o"), system_prompt="", stage=STAGE, trl=TRL,
                  reward={"weights": WEIGHTS, "aggregate": "sum", "penalties": {}, "step_rewards": True}, **PLAIN)
    with pytest.raises(GRPOSetupError, match="run the sft step first"):
        train_grpo(job)


def test_missing_instance_file_is_a_setup_error_before_any_sandbox(trained, tmp_path):
    job, _ = trained
    missing = GRPOJob(**{**job.__dict__, "instances": str(tmp_path / "absent.json"), "out_dir": str(tmp_path / "o")})
    with pytest.raises(GRPOSetupError, match="absent.json is missing; run the dataset step first"):
        train_grpo(missing)


def test_a_resumed_run_reads_its_before_measurement_back(trained, monkeypatch):
    """The before measurement is saved as soon as it is taken: a run resumed from its
    checkpoints measures only after training, and reports the same before."""
    import runtime.train.grpo.trainer as trainer_module

    job, first = trained
    samples = []
    real = trainer_module.measure
    monkeypatch.setattr(trainer_module, "measure",
                        lambda *args, **kwargs: samples.append(kwargs.get("samples", 0)) or real(*args, **kwargs))
    job.trl = {**job.trl, "max_steps": job.trl["max_steps"] + 1}
    summary = train_grpo(job)
    assert samples == [0, job.stage["group"]]          # after training, greedy and sampled; nothing before
    assert (summary["before"], summary["before_sampled"]) == (first["before"], first["before_sampled"])
    assert summary["change"]["greedy"].keys() == first["change"]["greedy"].keys()


def test_a_saved_before_measurement_of_other_rows_is_measured_again(tmp_path):
    from runtime.train.grpo.measuring import measured_before

    taken = []
    measurement = ({"total": 0.5}, {"total": 0.25}, [["i0", {"total": 0.5}]], [["i0", {"total": 0.25}]])

    def take():
        taken.append(1)
        return measurement

    path = tmp_path / "measured_before.json"
    assert measured_before(path, "key-a", take) == measurement and len(taken) == 1
    assert measured_before(path, "key-a", take) == measurement and len(taken) == 1      # read back
    measured_before(path, "key-b", take)                                                  # other rows or model
    assert len(taken) == 2
    path.write_text("{not json")
    assert measured_before(path, "key-b", take) == measurement and len(taken) == 3       # unreadable
