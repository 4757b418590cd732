"""The general-skill check reads lm-eval's task index once and scores every model against it.

lm-eval's `TaskManager` reads every task YAML lm-eval ships (about 15 s on 2 cores), so it
is built once per eval, not once per model. lm-eval's scoring is replaced here by a fake
with known per-example scores; the e2e smoke test runs the real one.
"""

from __future__ import annotations

import pytest

import runtime.eval.general as general

SCORES = {"base": [1, 0, 1, 0], "craft": [1, 1, 1, 0], "stuffed": [0, 0, 1, 0]}


class CountingTaskManager:
    built = 0

    def __init__(self, include_path=None):
        type(self).built += 1
        self.include_path = include_path
        self.all_tasks = ["craft_sums"]


@pytest.fixture
def fake_lm_eval(monkeypatch):
    import lm_eval.tasks

    CountingTaskManager.built = 0
    monkeypatch.setattr(lm_eval.tasks, "TaskManager", CountingTaskManager)
    managers = []

    def evaluate(model_dir, tasks, manager, limit, seed):
        managers.append(manager)
        samples = [{"doc_id": i, "metrics": ["acc"], "acc": s} for i, s in enumerate(SCORES[model_dir.name])]
        return {"samples": {task: samples for task in tasks}}

    monkeypatch.setattr(general, "_evaluate", evaluate)
    return managers


def test_one_task_index_serves_every_model(fake_lm_eval, tmp_path):
    models = {name: tmp_path / name for name in SCORES}
    report = general.run_general(models, ("craft_sums",), "tasks_dir", limit=4, log=lambda _: None)
    assert CountingTaskManager.built == 1
    assert len(fake_lm_eval) == 3 and len({id(m) for m in fake_lm_eval}) == 1
    assert fake_lm_eval[0].include_path == "tasks_dir"
    assert report["models"]["craft"]["craft_sums"] == {"metric": "acc", "score": 0.75, "n": 4}
    assert report["changes"]["craft"]["craft_sums"]["delta"] == 0.25
    assert report["changes"]["stuffed"]["craft_sums"]["delta"] == -0.25


def test_an_unknown_task_is_named_before_any_model_is_scored(fake_lm_eval, tmp_path):
    with pytest.raises(general.GeneralEvalError, match=r"`gsm9k` is not an lm-eval task or in `tasks_dir`"):
        general.run_general({"base": tmp_path / "base"}, ("craft_sums", "gsm9k"), "tasks_dir", limit=4,
                            log=lambda _: None)
    assert fake_lm_eval == []
