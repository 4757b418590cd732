"""Why a turn failed: one hand-made episode per failure class, in the order they are tried.

The asked workflow ranks active campaigns by clicks over the last ``days`` days and keeps
``n``; its reference result has three rows. Another workflow of the same recipe totals
unpaid invoices per advertiser.
"""

import pandas as pd

from runtime.agent import AgentTask, Episode, ExecRecord, ModelCall, UserTurn
from runtime.eval import FAILURE_CLASSES, ReferenceCatalog, classify_turn, failure_summary

TOP_CLICKS = ("sql = \"\"\"SELECT c.name AS campaign, sum(s.clicks) AS clicks FROM daily_stat s "
              "JOIN campaign c ON c.id = s.campaign_id WHERE c.status = 'active' AND s.day > {days} "
              "AND s.day <= c.end_day "
              "GROUP BY c.name ORDER BY clicks DESC LIMIT {n}\"\"\"\nresult = api.query(sql)")
UNPAID = ("result = api.query(\"SELECT i.advertiser, sum(i.amount) AS billed, count(*) AS invoices "
          "FROM invoice i WHERE i.paid = false GROUP BY i.advertiser HAVING sum(i.amount) > 0\")")

TASK = AgentTask.from_dict({
    "instance_id": "top_clicks-0", "workflow": "top_clicks", "split": "new_values", "params": {"days": 30, "n": 5},
    "turns": [{"ask": "Top 5 active campaigns by clicks over 30 days", "plan": "Rank active campaigns by clicks.",
               "code": TOP_CLICKS.format(days=30, n=5),
               "expectations": [{"kind": "same_rows_as_solution", "ordered": True},
                                {"kind": "columns", "columns": ["campaign", "clicks"]}]}]})
OTHER = AgentTask.from_dict({"instance_id": "unpaid-0", "workflow": "unpaid", "params": {},
                             "turns": [{"ask": "Unpaid invoices per advertiser", "plan": "Total unpaid invoices.",
                                        "code": UNPAID}]})
CATALOG = ReferenceCatalog.build([TASK, OTHER])
REFERENCE = pd.DataFrame({"campaign": ["Summer", "Winter", "Spring"], "clicks": [30, 20, 10]})


def turn(code, frame=None, ok=True, consistency=1.0, plan="Rank active campaigns by clicks."):
    """A scored, failed user turn whose one model call ran ``code`` and returned ``frame``."""
    record = ExecRecord(ok=ok, rows=0 if frame is None else len(frame),
                        columns=() if frame is None else tuple(frame.columns))
    call = ModelCall(100, "", plan=plan, code=code, exec=record)
    return UserTurn(0, TASK.turns[0].ask, [call], final_ok=ok, final_code=code if ok else None,
                    final_plan=plan if ok else None, passed=False, consistency=consistency, final_frame=frame)


def classify(t, reference=REFERENCE):
    return classify_turn(t, TASK, reference, CATALOG)


def test_a_passing_turn_has_no_failure_class():
    t = turn(TOP_CLICKS.format(days=30, n=5), REFERENCE)
    t.passed = True
    assert classify(t) is None


def test_code_closer_to_another_workflow_answered_another_workflow():
    frame = pd.DataFrame({"advertiser": ["Acme"], "billed": [10.0], "invoices": [1]})
    assert classify(turn(UNPAID, frame)) == "answered_another_workflow"


def test_another_workflows_code_is_named_even_when_it_failed_to_run():
    # The class order puts the question answered before whether it ran.
    assert classify(turn(UNPAID, ok=False)) == "answered_another_workflow"


def test_a_plan_without_code_is_not_compared_with_other_workflows():
    # Plans read alike across sibling workflows; with no query the turn simply did not run.
    no_code = UserTurn(0, TASK.turns[0].ask, [ModelCall(100, "", plan="Total unpaid invoices.")], passed=False)
    assert classify(no_code) == "exec_error"


def test_no_successful_execution_is_an_exec_error():
    assert classify(turn(TOP_CLICKS.format(days=30, n=5).replace("clicks)", "clicks_total)"), ok=False)) \
        == "exec_error"


def test_no_rows_where_the_reference_has_rows_is_an_empty_result():
    empty = REFERENCE.iloc[0:0]
    assert classify(turn(TOP_CLICKS.format(days=30, n=5).replace("'active'", "'Active'"), empty)) == "empty_result"


def test_a_param_value_missing_from_the_code_is_a_wrong_parameter():
    # The analyst asked for 30 days; the code looks at 7.
    assert classify(turn(TOP_CLICKS.format(days=7, n=5), REFERENCE.head(2))) == "wrong_parameter"


def test_reading_the_param_from_params_is_not_a_wrong_parameter():
    code = TOP_CLICKS.format(days="{params['days']}", n=5).replace('sql = """', 'sql = f"""')
    assert classify(turn(code, REFERENCE.assign(clicks=[3, 2, 1]))) == "other"


def test_a_different_measure_column_is_a_wrong_metric():
    frame = pd.DataFrame({"campaign": ["Summer", "Winter", "Spring"], "impressions": [300, 200, 100]})
    code = TOP_CLICKS.format(days=30, n=5).replace("sum(s.clicks) AS clicks", "sum(s.impressions) AS impressions")
    assert classify(turn(code, frame)) == "wrong_metric"


def test_a_reference_filter_value_absent_from_the_code_is_a_missing_filter():
    code = TOP_CLICKS.format(days=30, n=5).replace("c.status = 'active' AND ", "")
    assert classify(turn(code, REFERENCE)) == "missing_filter"


def test_more_rows_with_fewer_filters_is_a_missing_filter():
    # The dropped filter compares two columns: no value is missing, the row count tells.
    code = TOP_CLICKS.format(days=30, n=5).replace(" AND s.day <= c.end_day", "")
    more = pd.DataFrame({"campaign": list("abcd"), "clicks": [4, 3, 2, 1]})
    assert classify(turn(code, more)) == "missing_filter"


def test_the_right_columns_with_another_row_count_is_a_wrong_grouping():
    fewer = pd.DataFrame({"campaign": ["Summer", "Winter"], "clicks": [50, 10]})
    code = TOP_CLICKS.format(days=30, n=5).replace("GROUP BY c.name", "GROUP BY c.name, c.advertiser_id")
    assert classify(turn(code, fewer)) == "wrong_grouping"


def test_another_row_count_with_the_same_grouping_and_filters_is_other():
    # A shifted window: the filters are all there and the grouping is the reference's.
    more = pd.DataFrame({"campaign": list("abcd"), "clicks": [4, 3, 2, 1]})
    code = TOP_CLICKS.format(days=30, n=5).replace("s.day > 30", "s.day + 30 > 30")
    assert classify(turn(code, more)) == "other"


def test_another_dimension_column_is_a_wrong_grouping():
    frame = pd.DataFrame({"advertiser": ["Acme", "Fly"], "clicks": [40, 20]})
    code = TOP_CLICKS.format(days=30, n=5).replace("c.name AS campaign", "c.advertiser AS advertiser")
    assert classify(turn(code, frame)) == "wrong_grouping"


def test_a_right_shaped_wrong_answer_with_low_consistency_is_a_plan_code_mismatch():
    wrong_values = REFERENCE.assign(clicks=[3, 2, 1])
    assert classify(turn(TOP_CLICKS.format(days=30, n=5), wrong_values, consistency=0.25)) == "plan_code_mismatch"


def test_a_right_shaped_wrong_answer_that_agrees_with_its_plan_is_other():
    wrong_values = REFERENCE.assign(clicks=[3, 2, 1])
    assert classify(turn(TOP_CLICKS.format(days=30, n=5), wrong_values, consistency=1.0)) == "other"


def test_a_stored_record_without_its_frame_is_classified_from_its_shape():
    # Episodes read back from episodes/<arm>.jsonl keep rows and columns, not the frame.
    stored = turn(TOP_CLICKS.format(days=30, n=5), REFERENCE.iloc[0:0])
    stored.final_frame = None
    assert classify(stored) == "empty_result"


def test_without_a_catalog_another_workflows_code_is_judged_by_its_result():
    frame = pd.DataFrame({"advertiser": ["Acme"], "billed": [10.0], "invoices": [1]})
    assert classify_turn(turn(UNPAID, frame), TASK, REFERENCE, None) == "wrong_parameter"


def test_solution_files_fill_in_workflows_the_tasks_do_not_cover():
    solution = '"""Total unpaid invoices for ${advertiser}."""\n' + UNPAID.replace("false", "false AND x = ${advertiser}")
    catalog = ReferenceCatalog.build([TASK], {"unpaid": [solution], "top_clicks": ["ignored: tasks cover it"]})
    assert sorted(catalog.texts) == ["top_clicks", "unpaid"]
    frame = pd.DataFrame({"advertiser": ["Acme"], "billed": [10.0], "invoices": [1]})
    assert classify_turn(turn(UNPAID, frame), TASK, REFERENCE, catalog) == "answered_another_workflow"


def test_the_summary_counts_each_class_and_keeps_its_first_example():
    first, second, passed = turn(UNPAID, ok=False), turn(UNPAID, ok=False), turn("x", REFERENCE)
    first.failure, second.failure = "answered_another_workflow", "answered_another_workflow"
    episodes = [Episode("top_clicks-0", "top_clicks", "new_values", "craft", [first]),
                Episode("top_clicks-1", "top_clicks", "new_values", "craft", [second, passed])]
    summary = failure_summary(episodes)
    assert list(summary["counts"]) == list(FAILURE_CLASSES)
    assert summary["failed_turns"] == 2 and summary["counts"]["answered_another_workflow"] == 2
    example = summary["examples"]["answered_another_workflow"]
    assert example["instance_id"] == "top_clicks-0" and example["question"] == TASK.turns[0].ask
    assert example["code"].startswith("result = api.query(\"SELECT i.advertiser")
    assert set(summary["examples"]) == {"answered_another_workflow"}


def test_an_answer_to_another_workflow_names_that_workflow_and_the_summary_counts_the_pairs():
    from runtime.eval import classify_episode

    ran, failed, other = turn(UNPAID, pd.DataFrame({"billed": [1.0]})), turn(UNPAID, ok=False), turn("x", ok=False)
    episode = classify_episode(Episode("top_clicks-0", "top_clicks", "new_values", "craft", [ran]),
                               TASK, [REFERENCE], CATALOG)
    assert ran.failure == "answered_another_workflow" and ran.answered_workflow == "unpaid"
    second = classify_episode(Episode("top_clicks-1", "top_clicks", "new_values", "craft", [failed, other]),
                              TASK, [REFERENCE, REFERENCE], CATALOG)
    assert failed.answered_workflow == "unpaid" and other.failure == "exec_error" and other.answered_workflow is None
    summary = failure_summary([episode, second])
    assert summary["answered_instead"] == [{"asked": "top_clicks", "answered": "unpaid", "turns": 2}]
    # The field survives the episode's JSON twin, and an old record without it reads as None.
    restored = Episode.from_dict(episode.to_dict())
    assert restored.turns[0].answered_workflow == "unpaid"
    old = episode.to_dict()
    del old["turns"][0]["answered_workflow"]
    assert Episode.from_dict(old).turns[0].answered_workflow is None
    assert "answered_instead" not in failure_summary([Episode.from_dict(old)])
