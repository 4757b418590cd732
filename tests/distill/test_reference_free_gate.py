"""The gate without a visible reference: agreement and the params the judges are told
were asked, on hand-made candidate results.

Each agreement test builds the candidates' result frames and gate outcomes as the gate
leaves them before agreement, then reads what `settle_agreement` decided.
"""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from runtime.distill.agreement import settle_agreement
from runtime.distill.blocks import format_turn, parse_turn
from runtime.distill.gates import GateCase, GateOutcome, TriGate, decide_first
from runtime.distill.step import asked_params

from distill_support import FIXTURES

ORDER = ("execution", "output", "judge")
# The question asks for the top campaigns by CTR over the last 30 days.
THIRTY_DAYS = pd.DataFrame({"campaign": ["a", "b"], "ctr": [0.30, 0.20]})
# What a candidate that put 60 where the question said 30 returns: another question's answer.
SIXTY_DAYS = pd.DataFrame({"campaign": ["c", "a"], "ctr": [0.40, 0.25]})
IGNORES_DAYS = "2/3 judges pass (unanimous): prompt_params: the question asks for days = 30 but the code never uses that value"


def _outcome(candidate: str, judge_reason: str | None) -> dict:
    outcome = GateOutcome(candidate, True, would_reject={"execution": None, "output": None,
                                                         "judge": "judge" if judge_reason else None},
                          reasons={"judge": judge_reason} if judge_reason else {})
    return decide_first(outcome, ORDER).to_dict()


def settle(results: dict[str, pd.DataFrame], judged: dict[str, str] | None = None, off_question=()):
    """Outcomes by candidate and the agreement summary for one instance turn."""
    judged = judged or {}
    outcomes = [_outcome(candidate, judged.get(candidate)) for candidate in results]
    summary = settle_agreement(outcomes, {("inst", 0): list(results.items())}, {}, {}, 0.5, ORDER, off_question)
    return {o["candidate_id"]: o for o in outcomes}, summary


def test_candidates_that_ignore_an_asked_param_no_longer_tie_with_those_that_answer():
    results = {"c0": THIRTY_DAYS, "c1": SIXTY_DAYS, "c2": SIXTY_DAYS, "c3": THIRTY_DAYS}
    judged = {"c1": IGNORES_DAYS, "c2": IGNORES_DAYS}

    # Counted as votes, the two 60-day results tie with the right one: the turn is lost.
    voting, summary = settle(results, judged)
    assert summary["set_aside"] == 1
    assert [voting[c]["reason_class"] for c in ("c0", "c3")] == ["no_agreement", "no_agreement"]

    outcomes, summary = settle(results, judged, off_question={"c1", "c2"})
    assert summary["agreed"] == 1 and summary["not_voting_off_question"] == 2
    assert outcomes["c0"]["accepted"] and outcomes["c3"]["accepted"]
    assert outcomes["c0"]["agreement"] == {"voters": 2, "largest": 2, "share": 1.0, "agreed": True}
    # The judge's rejection stands, and the record says why the candidate did not vote.
    assert (outcomes["c1"]["gate"], outcomes["c1"]["reason_class"]) == ("judge", "judge")
    assert outcomes["c1"]["agreement"]["voted"] is False


def test_off_question_candidates_no_longer_outvote_a_lone_answer_which_is_still_set_aside():
    results = {"c0": THIRTY_DAYS, "c1": SIXTY_DAYS, "c2": SIXTY_DAYS}
    judged = {"c1": IGNORES_DAYS, "c2": IGNORES_DAYS}

    voting, _ = settle(results, judged)
    assert voting["c0"]["reason_class"] == "disagree"      # outvoted by another question's answer

    outcomes, summary = settle(results, judged, off_question={"c1", "c2"})
    # One candidate agreeing with itself is still no evidence.
    assert outcomes["c0"]["reason_class"] == "no_agreement" and summary["set_aside"] == 1


def test_a_candidate_the_judges_reject_for_its_plan_still_votes_with_its_rows():
    # A leaked table name in the PLAN says nothing about the rows the CODE returned.
    results = {"c0": THIRTY_DAYS, "c1": THIRTY_DAYS, "c2": SIXTY_DAYS}
    outcomes, summary = settle(results, {"c0": "no_ddl_leak: the plan names the physical `fct_daily`"})
    assert summary["agreed"] == 1
    assert outcomes["c1"]["accepted"] and outcomes["c2"]["reason_class"] == "disagree"
    assert outcomes["c0"]["agreement"]["agreed"] is True and outcomes["c0"]["gate"] == "judge"


# ------------------------------------------------------------- the gate's side


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    from craftc.emit.compile import compile_to_dir
    from craftc.ir import Plan

    plan_dir = tmp_path_factory.mktemp("reference_free") / "plan"
    assert compile_to_dir(FIXTURES / "mini_ads.craft", plan_dir).ok
    return Plan.model_validate_json((plan_dir / "plan.json").read_text()).recipe


def _ran(frame: pd.DataFrame) -> SimpleNamespace:
    return SimpleNamespace(ok=True, error_class=None, error_type=None, error_message="", result_frame=frame,
                           result_rows=len(frame), result_columns=tuple(frame.columns), result_preview="",
                           stdout_tail="", wall_s=0.1, redacted=(), layers={})


def test_the_gate_keeps_out_of_the_vote_only_candidates_a_prompt_params_judge_rejects(recipe):
    gate = TriGate(recipe, pool=None)
    sql = ("SELECT c.name AS campaign, sum(s.clicks) / sum(s.impressions) AS ctr FROM daily_stat s "
           "JOIN ad ON ad.id = s.ad_id JOIN ad_group g ON g.id = ad.ad_group_id JOIN campaign c ON c.id = g.campaign_id "
           "WHERE s.date > (SELECT max(date) FROM daily_stat) - {days} GROUP BY c.name ORDER BY ctr DESC LIMIT 2")
    codes = {"c0": f'result = api.query("{sql.format(days=30)}")',
             "c1": f'result = api.query("{sql.format(days=60)}")',
             "c2": f'result = api.query("{sql.format(days=30)}")'}
    plan = "Rank the campaigns by click-through rate over the last 30 days and keep the top 2."
    # c2's PLAN leaks SQL; its code asks for the 30 days.
    plans = {"c0": plan, "c1": plan, "c2": plan + " Run SELECT on the stats."}
    frames = {"c0": THIRTY_DAYS, "c1": SIXTY_DAYS, "c2": THIRTY_DAYS}
    cases = [GateCase(c, "inst", 0, format_turn("t", plans[c], codes[c], recipe.format), "Top campaigns, 30 days",
                      {"days": 30}, instance_params={"days": 30}, reference_visible=False) for c in codes]
    parsed = [parse_turn(case.text, recipe.format) for case in cases]
    verdicts = gate._judge(cases, parsed)
    outcomes = [gate._decide(case, turn, _ran(frames[case.candidate_id]), verdict)
                for case, turn, verdict in zip(cases, parsed, verdicts)]

    assert [o.gate for o in outcomes] == [None, "judge", "judge"]
    assert "prompt_params" in outcomes[1].reason and "no_ddl_leak" in outcomes[2].reason
    assert [c for c, _ in gate.voters[("inst", 0)]] == ["c0", "c1", "c2"]
    assert gate.off_question == {"c1"}


def test_asked_params_are_the_slots_of_the_phrasings_shown_not_words_that_look_like_a_value(recipe):
    drilldown = next(w for w in recipe.workflows if w.name == "spend_drilldown")
    # "spend" is a word of the first question, not the industry it asks for: that comes in turn 2.
    instance = {"params": {"days": 30, "industry": "spend"},
                "turns": [{"ask": "Total spend per advertiser over the last 30 days", "phrasing_index": 0},
                          {"ask": "Only spend advertisers", "phrasing_index": 0},
                          {"ask": "Now split it by week", "phrasing_index": 0}]}
    assert asked_params(drilldown, instance, 0) == {"days": 30}
    assert asked_params(drilldown, instance, 1) == {"days": 30, "industry": "spend"}
    assert asked_params(drilldown, instance, 2) == {"days": 30, "industry": "spend"}   # a conversation keeps them


# ------------------------------------------------------------- thin evidence


def test_an_acceptance_on_a_one_row_reference_is_flagged_and_the_funnel_counts_it(recipe):
    from craftc.ir import Expectation
    from runtime.distill.funnel import build_funnel, funnel_markdown

    gate = TriGate(recipe, pool=None)
    same_rows = (Expectation(kind="same_rows_as_solution"),)
    count = pd.DataFrame({"campaigns": [12]})
    gate.references[("one", 0)] = _ran(count)
    gate.references[("many", 0)] = _ran(THIRTY_DAYS)
    plan = "Count the campaigns."
    # the corrupted code counts paused campaigns only: on this data the count is the same
    corrupted = "result = api.query(\"SELECT count(*) AS campaigns FROM campaign WHERE status = 'paused'\")"
    ranked = 'result = api.query("SELECT name AS campaign, objective AS ctr FROM campaign LIMIT 2")'
    cases = [GateCase("thin", "one", 0, format_turn("t", plan, corrupted, recipe.format), "How many campaigns?",
                      {}, same_rows),
             GateCase("firm", "many", 0, format_turn("t", "List two campaigns with their objective.", ranked,
                                                     recipe.format), "Top 2 campaigns", {}, same_rows)]
    parsed = [parse_turn(case.text, recipe.format) for case in cases]
    outcomes = [gate._decide(case, turn, _ran(frame), verdict) for case, turn, frame, verdict
                in zip(cases, parsed, (count, THIRTY_DAYS), gate._judge(cases, parsed))]
    assert [o.accepted for o in outcomes] == [True, True], [o.reason for o in outcomes]
    assert outcomes[0].thin_evidence == "the reference result has 1 row"
    assert outcomes[1].thin_evidence == "" and "thin_evidence" not in outcomes[1].to_dict()

    candidates = {c.candidate_id: {"text": c.text, "metadata": {}, "workflow": w}
                  for c, w in zip(cases, ("count_campaigns", "top_ctr"))}
    funnel = build_funnel([o.to_dict() for o in outcomes], candidates, recipe.gates.order)
    assert funnel["thin_evidence"] == {"accepted": 1, "of_accepted": 2, "per_workflow": {"count_campaigns": 1},
                                       "example": {"candidate_id": "thin", "reason": "the reference result has 1 row"}}
    assert "Warning: 1 of 2 accepted candidates rest only on a result equal to a reference of at most one row" \
        in funnel_markdown(funnel)
