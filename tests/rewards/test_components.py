"""Each reward component on hand-written agent turns."""

import pandas as pd
import pytest

from craftc.ir import Expectation, Reward
from runtime.rewards import (
    RewardSpec, RewardSpecError, TurnContext, consistency_reward, ddl_leaks, inspect_code, judge_reward,
    literal_values, outcome_reward, params_honoured, plan_code_agreement, process_reward, score_turn, total,
)
from tests.rewards.conftest import call, user_turn

PENALTIES = {"discovery_call": 0.05, "redundant_join": 0.1, "select_star": 0.05}
CTR_CODE = ("result = api.query('SELECT c.name, sum(d.clicks) / sum(d.impressions) AS ctr "
            "FROM daily_stat d JOIN campaign c ON c.id = d.campaign_id GROUP BY c.name')")


# ---------------------------------------------------------------- outcome

def test_outcome_is_full_when_the_only_execution_passes():
    assert outcome_reward(user_turn(call()), passed=True) == 1.0


def test_outcome_gives_execution_credit_without_a_passing_result():
    assert outcome_reward(user_turn(call()), passed=False) == 0.25


def test_outcome_step_rewards_count_each_tool_turn():
    recovered = user_turn(call(ok=False), call(ok=True))
    assert outcome_reward(recovered, passed=True, step_rewards=True) == pytest.approx(0.875)
    assert outcome_reward(recovered, passed=True, step_rewards=False) == 1.0


def test_outcome_is_zero_when_nothing_ran():
    assert outcome_reward(user_turn(call(ok=False), final_ok=False), passed=False) == 0.0


# ---------------------------------------------------------------- process

def test_process_full_marks_for_a_clean_well_formed_turn():
    assert process_reward(user_turn(call()), PENALTIES) == 1.0


def test_process_penalises_select_star():
    turn = user_turn(call(code="result = api.query('SELECT * FROM campaign')"))
    assert process_reward(turn, PENALTIES) == pytest.approx(0.95)


def test_process_penalises_a_redundant_join():
    code = ("result = api.query('SELECT c.name FROM campaign c "
            "JOIN advertiser a ON a.id = c.advertiser_id')")
    assert inspect_code(code).redundant_joins == 1
    assert process_reward(user_turn(call(code=code)), PENALTIES) == pytest.approx(0.9)


def test_a_join_whose_columns_are_selected_is_not_redundant():
    assert inspect_code(CTR_CODE).redundant_joins == 0


def test_process_penalises_each_discovery_call():
    turn = user_turn(call(discovery=2, api_calls=("list_entities", "describe")))
    assert process_reward(turn, PENALTIES) == pytest.approx(0.9)


def test_process_halves_code_quality_for_a_bare_except_and_an_endless_loop():
    code = "try:\n    x = 1\nexcept:\n    pass\nwhile True:\n    pass\nresult = x"
    findings = inspect_code(code)
    assert (findings.bare_excepts, findings.unbounded_loops, findings.quality) == (1, 1, 0.25)
    assert process_reward(user_turn(call(code=code)), PENALTIES) == pytest.approx(0.5 + 0.5 * 0.25)


def test_process_gives_no_quality_to_code_that_does_not_parse():
    assert inspect_code("result = (").parses is False
    assert process_reward(user_turn(call(code="result = (", ok=False)), PENALTIES) == 0.5


def test_process_halves_structure_for_a_malformed_turn():
    assert process_reward(user_turn(call(well_formed=False)), PENALTIES) == 0.75


def test_process_never_goes_below_zero():
    turn = user_turn(call(discovery=40))
    assert process_reward(turn, PENALTIES) == 0.0


# ---------------------------------------------------------------- consistency

def test_consistency_full_when_plan_and_code_name_the_same_entities_and_metric(terms):
    plan = "Compute the CTR of each campaign from its daily stats."
    assert plan_code_agreement(plan, CTR_CODE, terms) == 1.0


def test_consistency_low_when_the_plan_promises_a_metric_the_code_does_not_read(terms):
    plan = "Compute the CTR of each campaign."
    code = "result = api.query('SELECT name FROM campaign')"
    assert plan_code_agreement(plan, code, terms) == 0.0


def test_consistency_partial_when_code_reads_an_entity_the_plan_never_names(terms):
    plan = "List campaigns."
    code = ("result = api.query('SELECT c.name, a.name FROM campaign c "
            "JOIN advertiser a ON a.id = c.advertiser_id')")
    # The plan_code judge passes (every entity the plan names is read: half the score);
    # the entity overlap is 1 of 2 (a quarter).
    assert plan_code_agreement(plan, code, terms) == pytest.approx(0.75)


def test_consistency_of_a_turn_averages_its_code_calls(terms):
    good = call(plan="Count campaigns.")
    bad = call(plan="Count advertisers.")
    assert consistency_reward(user_turn(bad, good), terms) == pytest.approx(0.5)
    assert consistency_reward(user_turn(bad, good), terms, step_rewards=False) == 1.0


# ---------------------------------------------------------------- judge

def test_judge_params_honoured_in_code_or_plan():
    assert params_honoured({"n": 5, "advertiser": "Acme Travel"}, "Top campaigns of Acme Travel",
                           "result = api.query('SELECT 1').head(5)") == 1.0
    assert params_honoured({"n": 5, "days": 30}, "Top campaigns", "x = 5") == 0.5


def test_judge_finds_ddl_in_a_plan(terms):
    assert ddl_leaks("Read adw.campaign_dim and sum clicks.", terms) == ["adw.campaign_dim"]
    assert ddl_leaks("SELECT the campaigns", terms) == ["SELECT"]
    assert ddl_leaks("Count campaigns per advertiser.", terms) == []


def test_judge_averages_params_and_no_ddl(terms):
    turn = user_turn(call(plan="Count campaign_id values.", code="result = 3"))
    assert judge_reward(turn, {"n": 3}, terms) == 0.5


# ---------------------------------------------------------------- total and spec

def test_total_sum_and_normalized():
    comps = {"outcome": 1.0, "process": 0.5, "consistency": 0.0, "judge": 1.0}
    weights = {"outcome": 0.5, "process": 0.2, "consistency": 0.2, "judge": 0.1}
    assert total(comps, weights, "sum") == pytest.approx(0.7)
    assert total(comps, {k: 2 * v for k, v in weights.items()}, "normalized") == pytest.approx(0.7)


def test_total_refuses_missing_components():
    with pytest.raises(ValueError, match="judge"):
        total({"outcome": 1.0}, {"outcome": 1.0, "judge": 1.0})


def test_spec_trl_weights_reproduce_the_normalized_total():
    spec = RewardSpec.from_ir(Reward(outcome=2, process=1, consistency=1, judge=0, aggregate="normalized"))
    assert spec.trl_weights == [0.5, 0.25, 0.25, 0.0]
    assert sum(spec.trl_weights) == pytest.approx(1.0)


def test_spec_rejects_negative_and_unnormalisable_weights():
    with pytest.raises(RewardSpecError, match="negative"):
        RewardSpec({"outcome": -1.0}, aggregate="sum", penalties={}, step_rewards=True)
    with pytest.raises(RewardSpecError, match="cannot be normalised"):
        RewardSpec({"outcome": 0.0}, aggregate="normalized", penalties={}, step_rewards=True)


def test_score_turn_checks_the_result_against_the_reference(terms):
    turn = user_turn(call())
    turn.final_frame = pd.DataFrame({"n": [3]})
    ctx = TurnContext(params={}, reference=pd.DataFrame({"n": [3]}),
                      expectations=(Expectation(kind="same_rows_as_solution"),), terms=terms)
    spec = RewardSpec.from_ir(Reward(aggregate="sum"))
    scores = score_turn(turn, ctx, spec)
    assert turn.passed is True
    assert scores == {"outcome": 1.0, "process": 1.0, "consistency": 1.0, "judge": 1.0,
                      "total": pytest.approx(1.0)}
    turn.final_frame = pd.DataFrame({"n": [4]})
    assert score_turn(turn, ctx, spec)["outcome"] == 0.25


def test_literal_values_reads_python_and_sql_filters():
    code = ("df = api.query(\"SELECT * FROM campaign WHERE industry = 'travel' AND budget > 100\")\n"
            "result = df[df['n'] >= 7.0]")
    assert literal_values(code) == {"travel", "100", "7"}
