"""The dataset step's leak audit: a clean run has no overlap, and each kind of leak,
planted in the artifact it could reach, fails the step with a message naming it."""

from __future__ import annotations

import json
import shutil

import pytest

from distill_support import _run_step
from runtime.step_context import StepError

STEPS = ("world", "distill", "gate")


def _copy_run(distilled, tmp_path):
    run_dir, _ = distilled
    copy = tmp_path / "run"
    for step in STEPS:
        shutil.copytree(run_dir / step, copy / step)
    return copy


def _instances(run_dir):
    return json.loads((run_dir / "gate" / "instances.json").read_text())


def _save_instances(run_dir, instances):
    (run_dir / "gate" / "instances.json").write_text(json.dumps(instances, indent=1, sort_keys=True))


def _train_and_test(instances):
    """A train instance and a test instance of one workflow, each with a first turn."""
    for test in (i for i in instances if i["split"] == "test" and i.get("heldout") != "new_workflow"):
        train = next((i for i in instances if i["split"] == "train" and i["workflow"] == test["workflow"]), None)
        if train is not None:
            return train, test
    raise AssertionError("no workflow with both a train and a test instance")


def _fails(compiled, run_dir, *words):
    plan, plan_dir, _ = compiled
    with pytest.raises(StepError) as err:
        _run_step(plan, plan_dir, run_dir, "dataset")
    message = str(err.value)
    assert message.startswith("leak audit:")
    for word in words:
        assert word in message, message
    assert not (run_dir / "dataset").exists()       # nothing half-written
    return message


def test_the_mini_run_has_no_held_out_turn_in_any_training_artifact(distilled):
    run_dir, results = distilled
    record = json.loads((run_dir / "dataset" / "leakage.json").read_text())
    assert record["overlapping_turns"] == {"dev": 0, "test": 0}
    assert record["overlaps"] == [] and record["artifacts"] == {}
    assert set(record["checked"]) == {"question_text", "reference_code", "value_combination", "tokenizer_corpus",
                                      "teacher_alternatives", "decoding_vocabulary"}
    assert record["splits"]["test"]["turns"] > 0 and record["splits"]["dev"]["turns"] > 0
    assert results["dataset"].metrics["overlapping_turns"] == {"dev": 0, "test": 0}
    # the tokenizer corpus holds no held-out question or reference
    corpus = (run_dir / "dataset" / "dataset" / "corpus.txt").read_text()
    held = [i for i in _instances(run_dir) if i["split"] != "train"]
    assert not [t["code"] for i in held for t in i["turns"] if t["code"] and t["code"].strip() in corpus]


def test_a_held_out_question_in_training_fails_the_step(distilled, compiled, tmp_path):
    run_dir = _copy_run(distilled, tmp_path)
    instances = _instances(run_dir)
    train, test = _train_and_test(instances)
    train["turns"][0]["ask"] = test["turns"][0]["ask"]
    _save_instances(run_dir, instances)
    _fails(compiled, run_dir, "question_text", test["instance_id"], "grpo_rows")


def test_a_held_out_reference_in_training_fails_the_step(distilled, compiled, tmp_path):
    run_dir = _copy_run(distilled, tmp_path)
    instances = _instances(run_dir)
    train, test = _train_and_test(instances)
    train["turns"][0]["code"] = test["turns"][0]["code"]
    _save_instances(run_dir, instances)
    _fails(compiled, run_dir, "reference_code", test["instance_id"])


def test_held_out_values_in_training_fail_the_step(distilled, compiled, tmp_path):
    run_dir = _copy_run(distilled, tmp_path)
    instances = _instances(run_dir)
    train, test = _train_and_test(instances)
    train["params"] = dict(test["params"])          # the same question values, asked as before
    _save_instances(run_dir, instances)
    _fails(compiled, run_dir, "value_combination", test["instance_id"])


def test_a_held_out_reference_in_the_tokenizer_corpus_fails_the_step(distilled, compiled, tmp_path, monkeypatch):
    from runtime.distill import datasets

    run_dir = _copy_run(distilled, tmp_path)
    every = _instances(run_dir)
    real = datasets.corpus_text
    # the corpus built from every instance, held-out ones included
    monkeypatch.setattr(datasets, "corpus_text", lambda systems, templates, _train, extra:
                        real(systems, templates, every, extra))
    _fails(compiled, run_dir, "tokenizer_corpus")


def test_held_out_values_offered_to_the_teacher_fail_the_step(distilled, compiled, tmp_path):
    run_dir = _copy_run(distilled, tmp_path)
    instances = _instances(run_dir)
    train_values = {(i["workflow"], k, json.dumps(v)) for i in instances if i["split"] == "train"
                    for k, v in i["params"].items()}
    test = next(i for i in instances if i["split"] == "test" and i.get("heldout") != "new_workflow"
                and any((i["workflow"], k, json.dumps(v)) not in train_values for k, v in i["params"].items()))
    name, value = next((k, v) for k, v in test["params"].items()
                       if (test["workflow"], k, json.dumps(v)) not in train_values)
    path = run_dir / "distill" / "teacher_alternatives.json"
    alternatives = json.loads(path.read_text())
    alternatives.setdefault(test["workflow"], {}).setdefault(name, []).append(value)
    path.write_text(json.dumps(alternatives))
    _fails(compiled, run_dir, "teacher_alternatives", name)


def test_a_held_out_word_in_the_tokenizer_vocabulary_fails_the_step(distilled, compiled, tmp_path, monkeypatch):
    from runtime.distill import datasets
    from runtime.distill.leakage import _words

    run_dir = _copy_run(distilled, tmp_path)
    instances = _instances(run_dir)
    _, test = _train_and_test(instances)
    test["turns"][0]["ask"] += " for Quarzlane"    # a name only this held-out question uses
    _save_instances(run_dir, instances)
    trained = _words(part for i in instances if i["split"] == "train" for t in i["turns"]
                     for part in (t["ask"], t["plan"], t["code"]))
    only_held = ["quarzlane"]
    assert not set(only_held) & trained
    real = datasets.corpus_text
    # one word no training text has, which a vocabulary built from the corpus would learn
    monkeypatch.setattr(datasets, "corpus_text", lambda *args: real(*args) + only_held[0] + "\n")
    _fails(compiled, run_dir, "decoding_vocabulary", only_held[0])
