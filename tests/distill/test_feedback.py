"""Teacher feedback: a candidate whose code fails goes back to the teacher with the error,
and the repaired turn replaces it (synthetic teacher: regenerated from the reference)."""

from __future__ import annotations

import json

from distill_support import _run_step, compile_variant

TEACHER = "teacher synthetic { candidates 6  noise 0.6 }"
# Eight training instances per workflow (the fixture's eval draws about 48): a few hundred
# noisy candidates already hold every noise kind that feedback repairs, and each one gated
# is a sandbox job.
VOLUME = "instances 8"


def _distill_and_gate(fresh_run_dir, tmp_path, teacher: str):
    _, _, run_dir = fresh_run_dir
    plan, plan_dir = compile_variant(tmp_path / "recipe", {TEACHER: teacher})
    results = {name: _run_step(plan, plan_dir, run_dir, name) for name in ("distill", "gate", "dataset")}
    candidates = [json.loads(line) for line in (run_dir / "distill/candidates.jsonl").read_text().splitlines()]
    return run_dir, results, candidates


def test_runtime_errors_are_repaired_and_the_repairs_pass_the_gate(fresh_run_dir, tmp_path):
    run_dir, results, candidates = _distill_and_gate(
        fresh_run_dir, tmp_path, f"teacher synthetic {{ candidates 6  noise 0.6  feedback 1  {VOLUME} }}")
    repaired = [c for c in candidates if c["metadata"].get("repairs")]
    kinds = {c["metadata"]["repaired_from"] for c in repaired}
    assert repaired and {"syntax_error", "runtime_error"} & kinds, kinds
    assert all("attempts" not in c for c in repaired), "failed_attempts drop keeps no failed turn"
    outcomes = {o["candidate_id"]: o for o in map(json.loads, (run_dir / "gate/outcomes.jsonl").read_text().splitlines())}
    gated = [c for c in repaired if c["candidate_id"] in outcomes]     # not set aside for an empty reference
    assert gated and all(outcomes[c["candidate_id"]]["would_reject"]["execution"] is None for c in gated)
    funnel = json.loads((run_dir / "gate/funnel.json").read_text())
    assert len(repaired) == results["distill"].metrics["repaired"]
    assert funnel["repairs"]["repaired"] == len(gated)
    assert funnel["repairs"]["repaired_accepted"] > 0
    assert "Teacher feedback:" in (run_dir / "gate/funnel.md").read_text()


def test_masked_failed_attempts_stay_in_the_conversation_and_out_of_the_loss(fresh_run_dir, tmp_path):
    from datasets import load_from_disk

    from runtime.train.masking import labels_for
    from runtime.train.tiny_moe import build_tiny_moe

    run_dir, _, candidates = _distill_and_gate(
        fresh_run_dir, tmp_path, f"teacher synthetic {{ candidates 6  noise 0.6  feedback 2  failed_attempts masked  {VOLUME} }}")
    kept = [c for c in candidates if c.get("attempts")]
    assert kept and all(a["output"].startswith("Output of the CODE block:\n") and len(a["output"]) > 30
                    for c in kept for a in c["attempts"])
    rows = load_from_disk(str(run_dir / "dataset/dataset/stripped"))["messages"]
    with_attempt = next(m for m in rows if any(x.get("masked") for x in m))
    at = next(i for i, x in enumerate(with_attempt) if x.get("masked"))
    assert with_attempt[at]["role"] == "assistant" and with_attempt[at + 1]["role"] == "tool"
    tokenizer_dir = build_tiny_moe(tmp_path / "tok", [m["content"] for m in with_attempt] * 3,
                                   {"hidden": 32, "layers": 1, "vocab": 300, "intermediate": 32})
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    roles = {"assistant": "trained", "system": "masked", "tool": "masked", "user": "masked"}
    masked_labels = labels_for(tokenizer, with_attempt, roles)["labels"]
    unmasked = [{k: v for k, v in m.items() if k != "masked"} for m in with_attempt]
    plain_labels = labels_for(tokenizer, unmasked, roles)["labels"]
    trained = lambda labels: sum(label != -100 for label in labels)  # noqa: E731
    assert 0 < trained(masked_labels) < trained(plain_labels)


def test_a_field_read_through_the_wrong_alias_is_repaired_from_an_error_that_says_where_it_is(fresh_run_dir, tmp_path):
    # noise_kinds misplaced_field: every corrupted candidate reads a field through the alias
    # of another joined view (`a.cost`); the error names that view and the one that has it.
    run_dir, _, candidates = _distill_and_gate(fresh_run_dir, tmp_path, (
        "teacher synthetic { candidates 6  noise 0.6  noise_kinds misplaced_field  feedback 1  "
        f"failed_attempts masked  {VOLUME} }}"))
    moved = [c for c in candidates if c["metadata"].get("repaired_from") == "misplaced_field"]
    missed = [c for c in candidates if c["metadata"].get("noise_kind") == "misplaced_field"]
    assert moved, "the kind applies to the fixture's joins"
    # A repair follows an execution error only: what went unrepaired ran without one.
    assert len(missed) <= 0.15 * (len(moved) + len(missed)), (len(missed), len(moved))
    errors = [a["output"] for c in moved for a in c["attempts"]]
    assert all("UnknownFieldError: unknown field `" in e and "is a field of `" in e for e in errors), errors[:3]
    assert not any("did you mean" in e for e in errors), "a near name of the wrong view would mislead"
    outcomes = {o["candidate_id"]: o for o in map(json.loads, (run_dir / "gate/outcomes.jsonl").read_text().splitlines())}
    gated = [c for c in moved if c["candidate_id"] in outcomes]
    assert gated and all(outcomes[c["candidate_id"]]["would_reject"]["execution"] is None for c in gated)
