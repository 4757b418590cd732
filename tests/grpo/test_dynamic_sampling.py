"""Dynamic sampling (flat groups replaced and counted) and GRPO measured on dev, paired and over the steps."""

import json
from pathlib import Path

import pytest

from runtime.train.grpo import train_grpo
from runtime.train.grpo.measuring import paired_change
from runtime.train.grpo.rollout import DynamicSampling
from tests.agent.warehouse import task_dict
from tests.grpo.test_grpo import STAGE, TRL, tiny_job

OUTCOMES = {"a": [1.0, 1.0], "b": [0.0, 1.0], "c": [0.0, 1.0], "d": [0.0, 0.0]}


def _play_keys(played):
    def play_keys(keys):
        played.append(list(keys))
        seen = {}
        out = []
        for key in keys:          # the j-th rollout of a row scores that row's j-th outcome
            j = seen.get(key, 0)
            seen[key] = j + 1
            out.append((OUTCOMES[key][j % 2], None, None))
        return out
    return play_keys


def test_zero_rounds_count_the_flat_groups_and_play_nothing():
    dynamic = DynamicSampling(rounds=0, group=2, keys=["a", "b", "c"], seed=0)
    played = []
    keys = ["a", "a", "b", "b"]
    results = [(1.0, None, None), (1.0, None, None), (0.0, None, None), (1.0, None, None)]
    assert dynamic.refill(list(keys), list(results), lambda key, episode: episode, _play_keys(played)) == (keys, results)
    assert played == []
    assert dynamic.per_step == [{"groups": 2, "dropped": 0, "replaced": 0, "flat_after": 1}]


def test_a_flat_group_is_replaced_by_a_group_of_another_row_and_counted():
    dynamic = DynamicSampling(rounds=2, group=2, keys=["a", "b", "c"], seed=0)
    played = []
    keys = ["a", "a", "b", "b"]
    results = [(1.0, None, None), (1.0, None, None), (0.0, None, None), (1.0, None, None)]
    keys, results = dynamic.refill(keys, results, lambda key, episode: episode, _play_keys(played))
    # `a` passed twice (no advantage): its group is now `c`'s, the only row not in the step.
    assert keys == ["c", "c", "b", "b"] and [r[0] for r in results] == [0.0, 1.0, 0.0, 1.0]
    assert played == [["c", "c"]]
    assert dynamic.per_step == [{"groups": 2, "dropped": 1, "replaced": 1, "flat_after": 0}]


def test_rounds_run_out_and_what_is_still_flat_is_counted():
    dynamic = DynamicSampling(rounds=2, group=2, keys=["a", "d"], seed=0)
    played = []
    keys, results = dynamic.refill(["d", "d"], [(0.0, None, None)] * 2, lambda key, episode: episode,
                                   _play_keys(played))
    # `d` fails twice; `a` (the other row) passes twice; round 2 draws `d` again.
    assert played == [["a", "a"], ["d", "d"]]
    assert dynamic.per_step[-1] == {"groups": 1, "dropped": 2, "replaced": 2, "flat_after": 1}
    assert keys == ["d", "d"]


def test_groups_that_are_not_whole_are_left_as_they_are():
    dynamic = DynamicSampling(rounds=1, group=2, keys=["a", "b"], seed=0)
    keys, _ = dynamic.refill(["a", "b"], [(1.0, None, None)] * 2, lambda key, episode: episode,
                             _play_keys([]))
    assert keys == ["a", "b"] and dynamic.per_step[-1]["unaligned"] is True


def test_a_measurement_between_steps_leaves_the_random_streams_of_training_as_they_were():
    import random
    from types import SimpleNamespace

    import torch

    from runtime.train.grpo.measuring import measure_every_callback

    def measure_model(model):           # what measure() does to the generators: seeds, then draws
        torch.manual_seed(0)
        random.seed(0)
        return {"total": float(torch.rand(1)) + random.random()}

    callback = measure_every_callback(2, measure_model)
    torch.manual_seed(123)
    random.seed(123)
    expected = (torch.rand(3), random.random())
    torch.manual_seed(123)
    random.seed(123)
    state = SimpleNamespace(global_step=2, max_steps=4, log_history=[])
    callback.on_step_end(None, state, None, model=None)
    assert [h["step"] for h in state.log_history] == [2] and "measured/total" in state.log_history[0]
    drawn = (torch.rand(3), random.random())
    assert torch.equal(drawn[0], expected[0]) and drawn[1] == expected[1]
    state.global_step = 3               # not a multiple of measure_every: nothing measured
    callback.on_step_end(None, state, None, model=None)
    assert len(state.log_history) == 1


def test_paired_change_is_clustered_by_instance_and_refuses_other_rollouts():
    before = [("i1", {"total": 0.5, "outcome": 0.0, "exec_success": 1.0}),
              ("i1", {"total": 0.5, "outcome": 0.0, "exec_success": 1.0}),
              ("i2", {"total": 0.2, "outcome": 0.0, "exec_success": 0.0})]
    after = [("i1", {"total": 0.7, "outcome": 1.0, "exec_success": 1.0}),
             ("i1", {"total": 0.5, "outcome": 0.0, "exec_success": 1.0}),
             ("i2", {"total": 0.4, "outcome": 1.0, "exec_success": 1.0})]
    change = paired_change(after, before)
    assert change["total"]["value"] == pytest.approx(0.4 / 3, abs=1e-6)
    assert change["outcome"]["clusters"] == 2 and change["outcome"]["n"] == 3
    with pytest.raises(ValueError, match="different rollouts"):
        paired_change(after[:2], before)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, warehouse, tiny_model):
    root = tmp_path_factory.mktemp("grpo_dynamic")
    (root / "dev.json").write_text(json.dumps([task_dict(4, "dev4")]))
    job = tiny_job(root, warehouse, tiny_model,
                   stage={**STAGE, "dynamic_sampling": 1, "rows": "fresh", "measure_every": 1},
                   trl={**TRL, "max_steps": 2}, measure_instances=str(root / "dev.json"))
    return job, train_grpo(job)


def test_an_untrained_policy_fails_every_group_and_each_step_says_so(trained):
    job, summary = trained
    # An untrained model never runs code: every group is flat, dropped, replaced by the
    # other row's group, which is flat too.
    dynamic = summary["dynamic_sampling"]
    assert dynamic["per_step"] == [{"groups": 1, "dropped": 1, "replaced": 1, "flat_after": 1}] * 2
    assert (dynamic["groups"], dynamic["dropped"]) == (2, 2)
    logged = [json.loads(line) for line in open(f"{job.out_dir}/metrics.jsonl")]
    assert [entry["dynamic_sampling/dropped"] for entry in logged if "dynamic_sampling/dropped" in entry] == [1.0, 1.0]
    # Each step rolled out two groups (the dropped one and its replacement); the rewards
    # scored only the replacement's.
    assert sum(summary["rollouts_per_workflow"].values()) == 2 * 2


def test_before_and_after_are_measured_on_dev_and_paired(trained):
    _, summary = trained
    assert summary["measured_on"] == "dev" and summary["measured_rows"] == 1
    assert summary["copy_bias"] == 0.0          # decoded plainly: the stage sets no copy_bias
    greedy = summary["change"]["greedy"]["total"]
    assert greedy["n"] == 1 and greedy["clusters"] == 1
    assert greedy["value"] == pytest.approx(summary["after"]["total"] - summary["before"]["total"], abs=1e-5)
    assert summary["change"]["sampled"]["outcome"]["n"] == STAGE["group"]


def test_the_measured_rows_are_played_every_measure_every_steps_and_plotted(trained):
    job, summary = trained
    curve = summary["curve"]
    # Before training, after step 1 (measure_every 1), and the after-training measurement
    # at the last step, which the callback leaves to it.
    assert [point["step"] for point in curve] == [0, 1, 2]
    assert {k: v for k, v in curve[0].items() if k != "step"} == summary["before"]
    assert {k: v for k, v in curve[-1].items() if k != "step"} == summary["after"]
    assert set(curve[1]) == set(curve[0]) and 0.0 <= curve[1]["total"] <= 1.0
    logged = [json.loads(line) for line in open(f"{job.out_dir}/metrics.jsonl")]
    assert [entry["step"] for entry in logged if "measured/total" in entry] == [1]
    assert "measured_score.png" in summary["plots"]
    assert (Path(job.out_dir) / "measured_score.png").stat().st_size > 0


def test_nothing_measured_draws_no_plot(tmp_path):
    from runtime.train.grpo.plots import plot_measured

    assert plot_measured([{"step": 0}, {"step": 2}], "training rows", tmp_path) == []
    assert not (tmp_path / "measured_score.png").exists()
    assert plot_measured([{"step": 0, "total": 0.4}, {"step": 2, "total": 0.5}], "dev", tmp_path) == [
        "measured_score.png"]
