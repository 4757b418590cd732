"""What each evaluation metric counts: excluded turns, coherence units, judged consistency,
clustered summaries and paired comparisons, on hand-made episodes."""

import math

import pandas as pd
import pytest

from craftc.ir import Entity, EntityKey, Schema
from runtime.agent import AgentTask, Episode, ModelCall, UserTurn
from runtime.eval.metrics import (
    instance_values, metric_values, paired_metric, per_workflow, summarise, turn_scores,
)
from runtime.eval.scoring import score_episode
from runtime.rewards import SchemaTerms, consistency_reward, plan_code_agreement
from tests.agent.warehouse import TOP_CODE, TRAVEL_CODE, task_dict

TERMS = SchemaTerms.from_schema(Schema(name="s", version=1, source="s", entities=(
    Entity(name="Campaign", table="adw.cmp", view="campaign", key=EntityKey(name="id", column="cid")),
    Entity(name="Advertiser", table="adw.adv", view="advertiser", key=EntityKey(name="id", column="aid")))))

NO_ROWS = "the reference returns no rows"


def turn(index, passed=True, calls=1, excluded="", **fields):
    return UserTurn(index, "q", [ModelCall(10, "") for _ in range(calls)], final_ok=passed, passed=passed,
                    excluded=excluded, **fields)


def episode(instance_id, *turns, workflow="w", split="eval_params"):
    return Episode(instance_id, workflow, split, turns=list(turns))


# ---------------------------------------------------------------- exclusions

def test_excluded_turns_count_in_no_metric():
    ep = episode("a", turn(0, True, calls=1), turn(1, False, calls=5, excluded=NO_ROWS))
    out = summarise([ep])
    assert (out["agent_score"]["value"], out["agent_score"]["n"]) == (1.0, 1)
    assert (out["execution_success"]["value"], out["execution_success"]["n"]) == (1.0, 1)
    assert out["model_calls"]["value"] == 1.0          # the excluded turn's five calls are not counted
    # The last turn is excluded: the conversation has no final answer to judge.
    assert out["final_answer_accuracy"]["n"] == 0


def test_an_episode_whose_turns_are_all_excluded_contributes_nothing():
    kept = episode("a", turn(0, True), turn(1, False, constraints_required=1, kept_constraints=False))
    gone = episode("b", turn(0, False, excluded=NO_ROWS), turn(1, False, excluded=NO_ROWS))
    both, alone = summarise([kept, gone]), summarise([kept])
    assert both == alone
    assert "b" not in instance_values([kept, gone], "model_calls")
    assert all(c == "a" for raw in metric_values([kept, gone]).values() for c in raw["clusters"])


def test_per_workflow_leaves_excluded_turns_out():
    rows = per_workflow([episode("a", turn(0, True), turn(1, False, excluded=NO_ROWS)),
                         episode("b", turn(0, False, excluded=NO_ROWS), workflow="v")])
    assert rows == [{"workflow": "v", "split": "eval_params", "passed": 0, "n": 0, "value": None},
                    {"workflow": "w", "split": "eval_params", "passed": 1, "n": 1, "value": 1.0}]


def test_exclusions_and_constraint_counts_survive_json():
    ep = episode("a", turn(0, True), turn(1, False, excluded=NO_ROWS, constraints_required=2))
    back = Episode.from_dict(ep.to_dict())
    assert [(t.excluded, t.constraints_required) for t in back.turns] == [("", None), (NO_ROWS, 2)]
    old = ep.to_dict()
    for t in old["turns"]:
        del t["excluded"], t["constraints_required"]
    assert [(t.excluded, t.constraints_required) for t in Episode.from_dict(old).turns] == [("", None)] * 2


# ---------------------------------------------------------------- clustered summaries

def test_agent_score_is_clustered_by_conversation():
    # The hand example of tests/eval/test_clustered_stats.py: conversations a (pass, pass, fail),
    # b (fail, fail) and c (pass, pass, pass): mean 5/8, se sqrt(2.84375) / 8 = 0.210793.
    eps = [episode("a", turn(0, True), turn(1, True), turn(2, False)),
           episode("b", turn(0, False), turn(1, False)),
           episode("c", turn(0, True), turn(1, True), turn(2, True))]
    assert summarise(eps)["agent_score"] == {"value": 0.625, "n": 8, "ci": [0.211854, 1.0], "se": 0.210793,
                                             "clusters": 3, "successes": 5}
    # One unit per conversation: last turns fail, fail, pass -> 1/3, residuals -1/3, -1/3, 2/3,
    # se = sqrt(1/9 + 1/9 + 4/9) / 3 = sqrt(6) / 9 = 0.272166.
    final = summarise(eps)["final_answer_accuracy"]
    assert (final["value"], final["se"], final["n"], final["clusters"], final["successes"]) == \
        (0.333333, 0.272166, 3, 3, 1)


def test_mean_metrics_have_each_instance_as_its_own_cluster():
    # Model calls per turn: instances with 1, 2 and 3 calls -> mean 2, se sqrt(1 + 0 + 1) / 3 = 0.471405,
    # ci 2 -+ 1.959964 * 0.471405 = 2 -+ 0.923936 = [1.076064, 2.923936].
    eps = [episode(str(k), turn(0, True, calls=k)) for k in (1, 2, 3)]
    out = summarise(eps)["model_calls"]
    assert out == {"value": 2.0, "n": 3, "ci": [1.076064, 2.923936], "se": 0.471405, "clusters": 3}
    assert out["se"] == round(math.sqrt(2) / 3, 6)


def test_count_intervals_stop_at_zero():
    eps = [episode(str(k), turn(0, True, calls=k)) for k in (0, 0, 0, 6)]
    assert summarise(eps)["model_calls"]["ci"][0] == 0.0


# ---------------------------------------------------------------- coherence

def test_coherence_counts_only_follow_ups_that_require_a_constraint():
    ep = episode("a", turn(0, True),
                 turn(1, True, constraints_required=0, kept_constraints=True),     # nothing to keep: no unit
                 turn(2, True, constraints_required=None, kept_constraints=True),  # count unknown: no unit
                 turn(3, True, constraints_required=2, kept_constraints=True),     # kept both
                 turn(4, True, constraints_required=1, kept_constraints=False),    # passed, dropped one
                 turn(5, False, constraints_required=1, kept_constraints=True),    # kept, failed
                 turn(6, True, constraints_required=1, kept_constraints=True, excluded=NO_ROWS))
    out = summarise([ep])["multi_turn_coherence"]
    assert (out["value"], out["n"], out["successes"]) == (0.333333, 3, 1)
    assert turn_scores([ep], "multi_turn_coherence") == {("a", 3): 1.0, ("a", 4): 0.0, ("a", 5): 0.0}


def test_scoring_records_how_many_constraints_each_follow_up_requires():
    data = task_dict(4)
    data["turns"].append({**data["turns"][1], "ask": "the top 4 of those", "code": TRAVEL_CODE.format(n=4)})
    task = AgentTask.from_dict(data)
    frame = pd.DataFrame({"name": ["x"], "daily_budget": [1.0]})
    ep = Episode(task.id, turns=[UserTurn(i, "q", [ModelCall(1, "", plan="Rank campaigns.", code=code)],
                                          final_ok=True, final_code=code, final_frame=frame)
                                 for i, code in enumerate([TOP_CODE.format(n=4), TRAVEL_CODE.format(n=4),
                                                           TOP_CODE.format(n=4)])])
    score_episode(ep, task, [frame, frame, frame], TERMS)
    assert [t.constraints_required for t in ep.turns] == [None, 0, 1]
    assert [t.kept_constraints for t in ep.turns] == [None, True, False]


# ---------------------------------------------------------------- consistency

def _call(plan, code):
    return ModelCall(1, "", plan=plan, code=code)


def test_a_plan_and_code_naming_no_entity_have_no_consistency_value_in_eval():
    plan, code = "Add one to one.", "result = 1 + 1"
    assert plan_code_agreement(plan, code, TERMS, no_entities=None) is None
    # The GRPO reward is unchanged: the judge's verdict plus a neutral 0.5 entity score.
    reward = plan_code_agreement(plan, code, TERMS)
    assert reward is not None and reward == consistency_reward(UserTurn(0, "q", [_call(plan, code)]), TERMS)
    assert reward in (0.25, 0.75)


def test_scoring_leaves_an_unjudged_turn_without_consistency():
    task = AgentTask.from_dict(task_dict(2))
    frame = pd.DataFrame({"x": [1]})
    ep = Episode(task.id, turns=[
        UserTurn(0, "q", [_call("Add one to one.", "result = 1 + 1")], final_ok=True, final_frame=frame),
        UserTurn(1, "q", [_call("Rank campaigns.", TOP_CODE.format(n=2))], final_ok=True, final_frame=frame)])
    score_episode(ep, task, [frame, frame], TERMS)
    assert ep.turns[0].consistency is None and ep.turns[1].consistency == 1.0


def test_consistency_is_the_mean_over_judged_turns_with_the_unjudged_counted_apart():
    eps = [episode("a", turn(0, consistency=1.0), turn(1, consistency=None), turn(2, consistency=0.5)),
           episode("b", turn(0, consistency=None)),                        # no judged turn: no instance value
           episode("c", turn(0, consistency=0.0), turn(1, consistency=0.4, excluded=NO_ROWS))]
    out = summarise(eps)["consistency"]
    # Instances a: (1.0 + 0.5) / 2 = 0.75 and c: 0.0 -> mean 0.375, residuals 0.375 and -0.375,
    # se = sqrt(0.375**2 * 2) / 2 = 0.265165; ci 0.375 -+ 0.519714 = [-0.144714, 0.894714], clipped at 0.
    assert out == {"value": 0.375, "n": 2, "ci": [0.0, 0.894714], "se": 0.265165, "clusters": 2, "unjudged": 2}
    assert turn_scores(eps, "consistency") == {("a", 0): 1.0, ("a", 2): 0.5, ("c", 0): 0.0}


# ---------------------------------------------------------------- paired comparisons

def test_paired_metric_pairs_the_turns_both_arms_scored():
    craft = [episode("a", turn(0, True), turn(1, True)), episode("b", turn(0, True), turn(1, False)),
             episode("c", turn(0, True)), episode("only_craft", turn(0, True))]
    stuffed = [episode("a", turn(0, False), turn(1, True)), episode("b", turn(0, False), turn(1, False)),
               episode("c", turn(0, False, excluded=NO_ROWS))]
    out = paired_metric(craft, stuffed, "agent_score")
    # Paired units: a0 (1-0), a1 (1-1), b0 (1-0), b1 (0-0): differences [1, 0 | 1, 0], mean 0.5.
    # Residuals per instance: a: 0.5 - 0.5 = 0, b: 0 -> se 0 (each conversation gains exactly one turn).
    assert (out["value"], out["n"], out["clusters"], out["se"], out["p_value"]) == (0.5, 4, 2, 0.0, None)
    assert out["mde"] == 0.0


def test_paired_metric_reports_the_clustered_error_and_the_detectable_difference():
    craft = [episode("a", turn(0, True), turn(1, True)), episode("b", turn(0, True), turn(1, False)),
             episode("c", turn(0, False), turn(1, False))]
    stuffed = [episode(e.instance_id, turn(0, False), turn(1, False)) for e in craft]
    out = paired_metric(craft, stuffed, "agent_score")
    # Differences a: [1, 1], b: [1, 0], c: [0, 0]; mean 3/6 = 0.5.
    # Residuals: a: 2 - 1 = 1, b: 1 - 1 = 0, c: 0 - 1 = -1 -> se = sqrt(2) / 6 = 0.235702.
    # p = erfc(0.5 / 0.235702 / sqrt(2)) = erfc(1.5) = 0.033895; mde = 2.801585 * 0.235702 = 0.660339.
    assert out == {"value": 0.5, "se": 0.235702, "ci": [0.038032, 0.961968], "n": 6, "clusters": 3,
                   "p_value": 0.033895, "mde": 0.660339}
    assert paired_metric(stuffed, craft, "agent_score")["value"] == -0.5


def test_paired_metric_with_nothing_in_common():
    out = paired_metric([episode("a", turn(0))], [episode("b", turn(0))], "execution_success")
    assert (out["value"], out["n"], out["mde"]) == (None, 0, None)


def test_turn_scores_refuse_unknown_metrics_and_repeated_turns():
    with pytest.raises(ValueError):
        turn_scores([episode("a", turn(0))], "input_tokens")
    with pytest.raises(ValueError):
        turn_scores([episode("a", turn(0)), episode("a", turn(0))], "agent_score")


def test_repairs_in_excluded_turns_are_not_counted():
    from runtime.agent import ExecRecord
    from runtime.eval.metrics import repair_counts

    failed = ModelCall(9, "", code="q(1)", exec=ExecRecord(ok=False, error_type="QueryError"),
                       tool_message="QueryError")
    fixed = ModelCall(9, "", code="q(2)", exec=ExecRecord(ok=True), tool_message="[3 rows]")
    ep = episode("a", UserTurn(0, "q", [failed, fixed]), UserTurn(1, "q", [failed, fixed], excluded=NO_ROWS))
    assert repair_counts([ep]) == {"repairs": 1, "same_code": 0, "ran": 1}
