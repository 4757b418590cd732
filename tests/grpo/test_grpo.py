"""GRPO on a tiny real model: multi-turn rollouts in the real sandbox, the composite reward."""

import json

import pytest

from runtime.train.grpo import GRPOJob, GRPOSetupError, main, train_grpo
from tests.agent.warehouse import task_dict

WEIGHTS = {"outcome": 0.5, "process": 0.2, "consistency": 0.2, "judge": 0.1}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, warehouse, tiny_model):
    model, tok = tiny_model
    root = tmp_path_factory.mktemp("grpo")
    model.save_pretrained(root / "sft")
    tok.save_pretrained(root / "sft")
    (root / "train.json").write_text(json.dumps([task_dict(n, f"i{n}") for n in (2, 3)]))
    job = GRPOJob(model_dir=str(root / "sft"), instances=str(root / "train.json"), warehouse=str(warehouse),
                  out_dir=str(root / "out"), system_prompt="Answer with THINK, PLAN, CODE.",
                  reward={"weights": WEIGHTS, "aggregate": "sum",
                          "penalties": {"select_star": 0.05}, "step_rewards": True},
                  stage={"group": 2, "steps": 3, "max_turns": 2, "max_new_tokens": 16, "lr": 1e-4},
                  measure_rows=2)
    return job, train_grpo(job)


def test_logged_reward_is_the_weighted_sum_of_logged_components(trained):
    job, _ = trained
    lines = [json.loads(l) for l in open(f"{job.out_dir}/metrics.jsonl")]
    steps = [l for l in lines if "reward" in l]
    assert len(steps) == 3
    for entry in steps:
        weighted = sum(w * entry[f"rewards/{c}/mean"] for c, w in WEIGHTS.items())
        assert entry["reward"] == pytest.approx(weighted, abs=1e-5)
        assert "exec_success" in entry


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
    # An untrained model never closes a CODE block, so each user turn uses its repair call too.
    assert all(l["model_calls"] == 2.0 for l in lines if "model_calls" in l)


def test_training_resumes_from_the_last_checkpoint(trained):
    job, _ = trained
    job.stage = {**job.stage, "steps": 4}
    summary = train_grpo(job)
    assert summary["steps"] == 4
    lines = [json.loads(l) for l in open(f"{job.out_dir}/metrics.jsonl")]
    assert [l["step"] for l in lines if "reward" in l] == [1, 2, 3, 4]


def test_bad_config_names_the_problem(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"model_dir": "x", "oops": 1}))
    assert main(["--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "unknown keys ['oops']" in err and "missing keys" in err


def test_missing_model_is_a_setup_error(tmp_path, warehouse):
    job = GRPOJob(model_dir=str(tmp_path / "none"), instances="x", warehouse=str(warehouse),
                  out_dir=str(tmp_path / "o"), system_prompt="", reward={"weights": WEIGHTS})
    with pytest.raises(GRPOSetupError, match="run the sft step first"):
        train_grpo(job)


def test_missing_instance_file_is_a_setup_error_before_any_sandbox(trained, tmp_path):
    job, _ = trained
    missing = GRPOJob(**{**job.__dict__, "instances": str(tmp_path / "absent.json"), "out_dir": str(tmp_path / "o")})
    with pytest.raises(GRPOSetupError, match="absent.json is missing; run the dataset step first"):
        train_grpo(missing)
