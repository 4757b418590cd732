"""The seeded synthetic distillation: noise is caught by the gate meant for it, clean
candidates pass, and the datasets hold what the sft and eval steps read."""

from __future__ import annotations

import json

from runtime.distill.blocks import parse_turn
from runtime.distill.noise import DEFAULT_NOISE_KINDS as NOISE_KINDS, INTENDED_GATE

from distill_support import SEED, _run_step


def _funnel(run_dir):
    return json.loads((run_dir / "gate" / "funnel.json").read_text())


def test_corrupted_candidates_are_rejected_and_clean_ones_pass(distilled):
    run_dir, _ = distilled
    confusion = _funnel(run_dir)["confusion"]
    print(f"\ncorrupted rejected: {confusion['corrupted_rejected']}/{confusion['corrupted']} "
          f"({confusion['corrupted_rejected_rate']:.1%}); clean rejected: {confusion['clean_rejected_rate']:.1%} "
          f"of {confusion['clean']}")
    assert confusion["corrupted"] >= 100
    assert confusion["corrupted_rejected_rate"] >= 0.95
    assert confusion["clean"] >= 50
    assert confusion["clean_rejected_rate"] <= 0.02


def test_each_noise_kind_is_caught_by_its_intended_gate(distilled):
    run_dir, _ = distilled
    rows = {row["kind"]: row for row in _funnel(run_dir)["confusion"]["rows"]}
    assert set(NOISE_KINDS) <= set(rows), "every noise kind occurs in a seeded run"
    for kind in NOISE_KINDS:
        row = rows[kind]
        caught = row["would"][INTENDED_GATE[kind]] / row["total"]
        print(f"{kind:22s} {row['total']:3d}  first {row['first']}  intended {INTENDED_GATE[kind]} {caught:.0%}")
        assert caught >= 0.85, f"{kind}: only {caught:.0%} caught by the {INTENDED_GATE[kind]} gate"
    for kind in NOISE_KINDS:
        if INTENDED_GATE[kind] != "judge" or kind == "params_ignored":
            continue
        assert rows[kind]["first"]["judge"] >= 0.85 * rows[kind]["total"], f"{kind} reaches the judge gate"


def test_a_scratchpad_lists_only_the_params_the_questions_so_far_ask_for(distilled, compiled):
    # "Total spend per advertiser over the last 30 days" names no industry: the industry
    # comes with the next question, and a first-turn scratchpad that listed it would teach
    # the agent to invent a filter the analyst never asked for.
    run_dir, _ = distilled
    plan = compiled[0]
    instances = {i["instance_id"]: i for i in json.loads((run_dir / "distill" / "instances.json").read_text())}
    listed = {}
    for line in (run_dir / "distill" / "candidates.jsonl").read_text().splitlines():
        candidate = json.loads(line)
        think = parse_turn(candidate["text"], plan.recipe.format).think or ""
        names = [p.split(" = ")[0] for row in think.splitlines() if row.startswith("Parameters: ")
                 for p in row[len("Parameters: "):].rstrip(".").split(", ")]
        instance = instances[candidate["instance_id"]]
        if len(instance["turns"]) > 1:
            listed.setdefault(candidate["turn"], set()).update(names)
    assert listed[0] == {"days"}
    assert listed[1] == listed[2] == {"days", "industry"}


def test_funnel_counts_add_up_and_markdown_is_written(distilled):
    run_dir, results = distilled
    funnel = _funnel(run_dir)
    gates = funnel["gates"]
    assert [g["gate"] for g in gates] == ["execution", "output", "judge"]
    assert gates[0]["entered"] == funnel["candidates"]
    for before, after in zip(gates, gates[1:]):
        assert after["entered"] == before["passed"]
    assert gates[-1]["passed"] == funnel["accepted"] == results["gate"].metrics["accepted"]
    assert sum(g["rejected"] for g in gates) + funnel["accepted"] == funnel["candidates"]
    markdown = (run_dir / "gate" / "funnel.md").read_text()
    assert "| execution |" in markdown and "ddl_leak" in markdown


def test_the_gate_records_which_sandbox_layers_protected_its_runs(distilled):
    run_dir, results = distilled
    sandbox = results["gate"].metrics["sandbox"]
    # The mini recipe runs 16 trusted teacher candidates in a job process, as the default does.
    assert sandbox["runs"] > 0 and sandbox["jobs_per_process"] == 16
    # Process-level layers hold everywhere; a fresh process is counted off where one was reused.
    assert {"process", "wall_timeout", "readonly_db", "audit_hook"} <= set(sandbox["layers_on_in_every_run"])
    assert 0 < sandbox["layers_off_in_some_run"]["fresh_process"] < sandbox["runs"]
    first = json.loads((run_dir / "gate" / "outcomes.jsonl").read_text().splitlines()[0])
    assert first["execution"]["layers"]["process"] is True


def test_dataset_round_trips_in_both_modes(distilled):
    from datasets import load_from_disk

    run_dir, results = distilled
    stripped = load_from_disk(str(run_dir / "dataset" / "dataset" / "stripped"))
    stuffed = load_from_disk(str(run_dir / "dataset" / "dataset" / "stuffed"))
    assert len(stripped) == len(stuffed) == results["dataset"].metrics["examples"] > 0
    assert set(stripped["split"]) == {"train"}
    for a, b in zip(stripped, stuffed):
        roles = [m["role"] for m in a["messages"]]
        assert roles[0] == "system"
        assert roles[1:] == ["user", "assistant", "tool", "assistant"] * a["turns"]
        assert a["messages"][1:] == b["messages"][1:], "modes differ only in the system prompt"
        assert a["messages"][0]["content"] != b["messages"][0]["content"]
        assert b["n_tokens"] > a["n_tokens"] > 0
        assert a["messages"][-1]["content"].startswith("<ANSWER>")
        assert a["token_counter"] == "craftc.tokens.estimate_tokens"
    assert max(stripped["turns"]) == 3, "the conversation keeps its three turns"


def test_eval_instances_are_held_out_of_training(distilled):
    from datasets import load_from_disk

    run_dir, _ = distilled
    held = json.loads((run_dir / "dataset" / "dataset" / "eval_instances.json").read_text())
    trained = set(load_from_disk(str(run_dir / "dataset" / "dataset" / "stripped"))["instance_id"])
    assert held and all(i["split"] != "train" for i in held)
    assert not trained & {i["instance_id"] for i in held}
    corpus = (run_dir / "dataset" / "dataset" / "corpus.txt").read_text()
    assert "click-through rate" in corpus.lower() and "api.query" in corpus


def test_same_seed_gives_same_bytes(distilled, fresh_run_dir):
    run_dir, _ = distilled
    plan, plan_dir, copy = fresh_run_dir
    _run_step(plan, plan_dir, copy, "distill")
    for name in ("candidates.jsonl", "instances.json"):
        assert (copy / "distill" / name).read_bytes() == (run_dir / "distill" / name).read_bytes()


def test_a_training_volume_keeps_the_held_out_instances_and_sets_the_train_count(distilled, fresh_run_dir):
    run_dir, _ = distilled
    plan, plan_dir, copy = fresh_run_dir
    teacher = plan.recipe.teacher.model_copy(update={"instances": 12})
    sized = plan.model_copy(update={"recipe": plan.recipe.model_copy(update={"teacher": teacher})})
    result = _run_step(sized, plan_dir, copy, "distill")

    def held_out(path):
        return [i for i in json.loads(path.read_text()) if i["split"] != "train"]

    assert held_out(copy / "distill" / "instances.json") == held_out(run_dir / "distill" / "instances.json")
    records = json.loads((copy / "distill" / "instances.json").read_text())
    per_workflow = {}
    for record in records:
        per_workflow[record["workflow"]] = per_workflow.get(record["workflow"], 0) + (record["split"] == "train")
    assert set(per_workflow.values()) == {12}
    train_ids = {r["instance_id"] for r in records if r["split"] == "train"}
    candidates = [json.loads(line) for line in (copy / "distill" / "candidates.jsonl").read_text().splitlines()]
    assert {c["instance_id"] for c in candidates} == train_ids
    assert result.metrics["splits"]["train"] == 12 * len(per_workflow)
