"""Discovery in the synthetic teacher's trajectories (`teacher synthetic { discovery SHARE }`):
where it writes `api.describe(...)`, that the gate accepts such candidates, that both datasets
carry them, and that evaluation counts the call from the sandbox's run record."""

from __future__ import annotations

import json
import random

import pytest

from craftc.ir import BlockFormat, Entity, EntityField, EntityKey, EntityRef, FieldType, Schema
from runtime.distill.blocks import format_turn, parse_turn
from runtime.distill.teachers import TeacherRequest
from runtime.distill.teachers.synthetic import SyntheticTeacher

from distill_support import _run_step, compile_variant

FMT = BlockFormat()
SCHEMA = Schema(
    name="ads", version=1, source="ads.craft",
    entities=(
        Entity(name="Campaign", table="adw.dim_cmp", view="campaign", key=EntityKey(name="id", column="cmp_id"),
               fields=(EntityField(name="name", type=FieldType(kind="string"), column="cmp_nm"),)),
        Entity(name="DailyStat", table="adw.fct_dly_stat", view="daily_stat",
               key=EntityKey(name="id", column="stat_id"),
               fields=(EntityField(name="clicks", type=FieldType(kind="int"), column="clk_cnt"),
                       EntityField(name="cost", type=FieldType(kind="money"), column="cost_micros")),
               refs=(EntityRef(name="campaign", target="Campaign", column="cmp_id"),)),
    ),
)
# The reference reads daily_stat first; `campaign` occurs earlier, but as a column alias.
REFERENCE = ('"""Spend per campaign."""\n'
             'sql = """\nSELECT c.name AS campaign, sum(s.cost) AS spend\nFROM daily_stat s\n'
             'JOIN campaign c ON c.id = s.campaign_id\nGROUP BY 1\n"""\nresult = api.query(sql)\n')
CONTEXT = {"ask": "Spend per campaign?", "params": {}, "plan": "Add up the spend of each campaign.", "code": REFERENCE}
FIRST_QUESTION = ({"role": "user", "content": "Spend per campaign?"},)


def _first_turn_requests(seeds=range(40), n=8):
    return [TeacherRequest("sys", FIRST_QUESTION, n, seed, CONTEXT) for seed in seeds]


def test_a_seeded_share_of_first_turn_candidates_describes_the_first_view_the_reference_reads():
    teacher = SyntheticTeacher(SCHEMA, FMT, noise=0.0, discovery=0.25)
    requests = _first_turn_requests()
    candidates = teacher.generate(requests)
    with_call = {(requests[c.request_index].seed, c.candidate_index) for c in candidates
                 if c.metadata.get("discovery") == "first_turn"}
    # The rule: candidate i of a first-turn request with seed s looks the schema up when its
    # own seeded draw falls under the share.
    assert with_call == {(r.seed, i) for r in requests for i in range(r.n)
                         if random.Random(f"{r.seed}:{i}:discovery").random() < 0.25}
    assert 0.18 <= len(with_call) / len(candidates) <= 0.32, len(with_call)
    for c in candidates:
        turn = parse_turn(c.text, FMT)
        if c.metadata.get("discovery"):
            docstring, call, rest = turn.code.split("\n", 2)
            assert (docstring, call) == ('"""Spend per campaign."""', 'api.describe("daily_stat")')
            assert rest.rstrip() == REFERENCE.split("\n", 1)[1].rstrip()
            assert 'I check the fields of daily_stat with `api.describe("daily_stat")`' in turn.think
        else:
            assert turn.code.strip() == REFERENCE.strip() and "api.describe" not in c.text


def test_follow_up_questions_get_no_first_turn_discovery():
    teacher = SyntheticTeacher(SCHEMA, FMT, noise=0.0, discovery=1.0)
    history = (*FIRST_QUESTION, {"role": "assistant", "content": format_turn("t", "p", REFERENCE, FMT)},
               {"role": "user", "content": "Only the last week"})
    follow_up = teacher.generate([TeacherRequest("sys", history, 8, 3, CONTEXT)])
    assert not any("discovery" in c.metadata for c in follow_up)
    assert all(c.metadata.get("discovery") == "first_turn" for c in teacher.generate(_first_turn_requests([3])))


def test_the_share_draws_apart_from_the_noise_so_other_candidates_are_unchanged():
    requests = _first_turn_requests(range(20))
    before = SyntheticTeacher(SCHEMA, FMT, noise=0.5).generate(requests)
    at_zero = SyntheticTeacher(SCHEMA, FMT, noise=0.5, discovery=0.0).generate(requests)
    with_share = SyntheticTeacher(SCHEMA, FMT, noise=0.5, discovery=0.3).generate(requests)
    assert [c.text for c in at_zero] == [c.text for c in before]
    assert [c.metadata for c in at_zero] == [c.metadata for c in before]
    assert [c.metadata["noise_kind"] for c in with_share] == [c.metadata["noise_kind"] for c in before]
    unchanged = [(a.text, b.text) for a, b in zip(with_share, before) if "discovery" not in a.metadata]
    assert unchanged and all(a == b for a, b in unchanged)
    assert any("discovery" in c.metadata and not c.metadata["clean"] for c in with_share), "noise still applies"


FAILED = ('sql = """SELECT c.name, sum(s.clicks_n) FROM campaign c JOIN daily_stat s ON c.id = s.campaign_id '
          'GROUP BY 1"""\nresult = api.query(sql)')


@pytest.mark.parametrize("error, call", [
    # No owner in the message: the failed query's view that has the suggested field.
    ("UnknownFieldError: unknown field `clicks_n`: did you mean `clicks`? (api.describe(entity) lists the fields) "
     "(line 2)", 'api.describe("daily_stat")'),
    ("UnknownFieldError: unknown field `nme` of `campaign`: did you mean `name`? "
     "(api.describe('campaign') lists the fields)", 'api.describe("campaign")'),
    ("UnknownFieldError: `cost_micros` is a physical column, not part of the API; use the field `cost` of "
     "`daily_stat`", 'api.describe("daily_stat")'),
    # No suggestion at all: the first view the failed query reads.
    ("UnknownFieldError: unknown field `zzz` (api.describe(entity) lists the fields)", 'api.describe("campaign")'),
    ("UnknownEntityError: unknown entity `campaing`: did you mean `campaign`? (api.list_entities() lists them)",
     'api.describe("campaign")'),
    ("UnknownEntityError: `adw.fct_dly_stat` is a physical table, not part of the API; query the logical view "
     "`daily_stat`", 'api.describe("daily_stat")'),
    ("UnknownEntityError: unknown entity `spend` (api.list_entities() lists them)", "api.list_entities()"),
    ("KeyError: 'limit' (line 1)", None),
    ("QueryError: Binder Error: No function matches the given name", None),
])
def test_a_repair_after_an_unknown_name_begins_with_discovery_of_the_misused_entity(error, call):
    conversation = (*FIRST_QUESTION, {"role": "assistant", "content": format_turn("t", "p", FAILED, FMT)},
                    {"role": "tool", "content": f"Output of the CODE block:\n{error}"})
    request = TeacherRequest("sys", conversation, 1, 9, {**CONTEXT, "repair": True})
    repaired, = SyntheticTeacher(SCHEMA, FMT, noise=0.5, discovery=0.2).generate([request])
    code = parse_turn(repaired.text, FMT).code
    if call is None:
        assert code.strip() == REFERENCE.strip() and "discovery" not in repaired.metadata
    else:
        assert code.split("\n")[1] == call and repaired.metadata["discovery"] == "repair"
        assert code.replace(call + "\n", "", 1).strip() == REFERENCE.strip()
    off, = SyntheticTeacher(SCHEMA, FMT, noise=0.5).generate([request])
    assert parse_turn(off.text, FMT).code.strip() == REFERENCE.strip(), "without the setting, no discovery"


def test_an_out_of_range_share_names_the_setting():
    from runtime.distill.teachers import TeacherError

    with pytest.raises(TeacherError, match="`discovery` must be between 0 and 1, got 1.5"):
        SyntheticTeacher(SCHEMA, FMT, discovery=1.5)


def test_discovery_trajectories_pass_the_gate_reach_both_datasets_and_count_in_the_run_record(
        fresh_run_dir, tmp_path):
    from datasets import load_from_disk

    from runtime.agent import AgentTask, Generation, run_episode
    from runtime.eval.metrics import discovery_loops
    from runtime.sandbox import SandboxLimits, SandboxPool

    _, _, run_dir = fresh_run_dir
    plan, plan_dir = compile_variant(tmp_path / "recipe", {
        "teacher synthetic { candidates 6  noise 0.6 }":
        # Eight training instances per workflow (the fixture's eval draws about 48): each
        # candidate gated is a sandbox job, and a few hundred hold both discovery rules.
        "teacher synthetic { candidates 6  noise 0.6  feedback 1  discovery 30%  instances 8 }"})
    assert json.loads((plan_dir / "plan.json").read_text())["recipe"]["teacher"]["discovery"] == 0.3
    for step in ("distill", "gate", "dataset"):
        _run_step(plan, plan_dir, run_dir, step)
    candidates = {c["candidate_id"]: c for c in map(json.loads, (run_dir / "distill/candidates.jsonl").open())}
    outcomes = {o["candidate_id"]: o for o in map(json.loads, (run_dir / "gate/outcomes.jsonl").open())}

    # The gate: clean candidates that look the schema up are accepted like any clean one.
    # (Candidates of an instance turn set aside for an empty reference are not gated.)
    funnel = json.loads((run_dir / "gate/funnel.json").read_text())
    print("\nfunnel discovery:", funnel["discovery"])
    assert set(funnel["discovery"]) == {"first_turn", "repair"}
    for rule in ("first_turn", "repair"):
        clean = [c for c in candidates.values() if c["metadata"].get("discovery") == rule
                 and c["metadata"]["clean"] and c["candidate_id"] in outcomes]
        assert clean, rule
        assert all(outcomes[c["candidate_id"]]["accepted"] for c in clean), rule
    repairs = [c for c in candidates.values() if c["metadata"].get("discovery") == "repair"]
    assert all(c["metadata"]["repaired_from"] == "wrong_column" for c in repairs), "only unknown-name errors"

    # Both arms train on the same trajectories: only the system prompt differs.
    arms = {mode: load_from_disk(str(run_dir / f"dataset/dataset/{mode}"))["messages"]
            for mode in ("stripped", "stuffed")}
    assert [m[1:] for m in arms["stripped"]] == [m[1:] for m in arms["stuffed"]]
    assert any("api.describe(" in x["content"] for m in arms["stripped"] for x in m if x["role"] == "assistant")

    # Evaluation's count: the accepted candidate replayed through the agent loop in the sandbox.
    instances = {i["instance_id"]: i for i in json.loads((run_dir / "distill/instances.json").read_text())}
    accepted = next(c for c in candidates.values() if c["metadata"].get("discovery") == "first_turn"
                    and outcomes.get(c["candidate_id"], {}).get("accepted")
                    and len(instances[c["instance_id"]]["turns"]) == 1)
    task = AgentTask.from_dict(instances[accepted["instance_id"]])
    replay = lambda conversations: [Generation(accepted["text"], input_tokens=1) for _ in conversations]  # noqa: E731
    with SandboxPool(1, run_dir / "world/warehouse.duckdb", SandboxLimits(), "runtime.world.api:WarehouseApi") as pool:
        episode = run_episode(replay, None, task, "sys", pool)
    turn, = episode.turns
    call, = turn.calls
    assert call.exec.ok and call.exec.api_calls[0] == "describe"
    assert call.discovery_calls == 1 and discovery_loops(turn) == 1
