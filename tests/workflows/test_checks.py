"""Checks judge a result on its own: each kind on hand-made frames, edges included."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from craftc.ir import CheckValue, Expectation
from runtime.distill.agreement import cluster_results
from runtime.workflows import check_result
from runtime.workflows.checks import same_result
from runtime.workflows.expectations import check_share


def values(column, op, *operands, tolerance=1e-6):
    ops = tuple(CheckValue(param=o[1:-1]) if isinstance(o, str) and o.startswith("{") else
                CheckValue(literal=o) for o in operands)
    return Expectation(kind="values", column=column, op=op, operands=ops, tolerance=tolerance)


def reasons(frame, check, params=None, previous=None):
    return check_result(frame, None, [check], params or {}, previous).reasons


CTR = pd.DataFrame({"campaign": ["a", "b", "c"], "ctr": [0.30, 0.20, 0.10]})


def test_between_passes_inside_and_names_the_first_value_outside():
    assert reasons(CTR, values("ctr", "between", 0.0, 1.0)) == []
    bad = CTR.assign(ctr=[0.3, 1.5, -0.1])
    assert reasons(bad, values("ctr", "between", 0.0, 1.0)) == ["ctr: 2 of 3 values not between 0 and 1 (first: 1.5)"]


def test_bounds_are_met_within_the_tolerance_and_not_beyond_it():
    frame = pd.DataFrame({"spend": [-1e-9, 5.0]})
    assert reasons(frame, values("spend", ">=", 0.0)) == []
    assert reasons(frame.assign(spend=[-0.01, 5.0]), values("spend", ">=", 0.0)) != []
    assert reasons(pd.DataFrame({"share": [1.0000000001]}), values("share", "<=", 1.0)) == []


def test_strict_comparisons_reject_equal_values():
    frame = pd.DataFrame({"spend": [0.0, 2.0]})
    assert reasons(frame, values("spend", ">", 0.0)) == ["spend: 1 of 2 values not > 0 (first: 0)"]


def test_nulls_are_not_judged_by_a_value_predicate():
    frame = pd.DataFrame({"ctr": [0.5, None]})
    assert reasons(frame, values("ctr", "between", 0.0, 1.0)) == []


def test_equality_with_a_param_honours_the_asked_value():
    frame = pd.DataFrame({"advertiser": ["Acme", "Acme"], "spend": [1.0, 2.0]})
    assert reasons(frame, values("advertiser", "==", "{advertiser}"), {"advertiser": "Acme"}) == []
    wrong = reasons(frame.assign(advertiser=["Acme", "Globex"]), values("advertiser", "==", "{advertiser}"),
                    {"advertiser": "Acme"})
    assert wrong == ["advertiser: 1 of 2 values not == Acme (first: Globex)"]


def test_column_names_match_in_any_case_and_a_missing_column_fails():
    assert reasons(CTR.rename(columns={"ctr": "CTR"}), values("ctr", ">=", 0.0)) == []
    assert reasons(CTR, values("cpc", ">=", 0.0)) == ["missing column `cpc`"]


def test_within_days_bounds_the_span_of_a_date_column():
    days = pd.DataFrame({"day": pd.to_datetime(["2024-03-01", "2024-03-07"])})
    assert reasons(days, values("day", "within_days", "{days}"), {"days": 7}) == []
    longer = pd.DataFrame({"day": [dt.date(2024, 3, 1), dt.date(2024, 3, 8)]})
    assert reasons(longer, values("day", "within_days", "{days}"), {"days": 7}) == [
        "day: dates span 8 days (2024-03-01 to 2024-03-08); expected at most 7"]
    assert reasons(pd.DataFrame({"day": ["soon"]}), values("day", "within_days", 7.0)) == ["day: `soon` is not a date"]


@pytest.mark.parametrize("ctr, descending, ok", [
    ([0.3, 0.2, 0.1], True, True),
    ([0.1, 0.2, 0.3], False, True),
    ([0.3, 0.1, 0.2], True, False),
    ([0.2, 0.2000000001, 0.1], True, True),      # a tie within the tolerance is not out of order
    ([0.3, None, 0.1], True, True),              # nulls are skipped
])
def test_sorted_by_checks_the_direction_with_ties_within_tolerance(ctr, descending, ok):
    check = Expectation(kind="sorted_by", columns=("ctr",), descending=descending)
    assert (reasons(pd.DataFrame({"ctr": ctr}), check) == []) is ok


def test_row_bounds_read_a_param():
    check = Expectation(kind="row_count", max_rows_param="n")
    assert reasons(CTR, check, {"n": 3}) == []
    assert reasons(CTR, check, {"n": 2}) == ["the result has 3 rows; expected at most 2"]
    assert reasons(CTR, check, {}) == ["the check needs param `n`, which the instance does not have"]


def test_subset_of_previous_compares_on_shared_or_named_columns():
    turn1 = pd.DataFrame({"advertiser": ["a", "b", "c"], "spend": [3.0, 2.0, 1.0]})
    narrowed = pd.DataFrame({"advertiser": ["b"], "spend": [2.0 + 1e-9]})
    check = Expectation(kind="subset_of_previous")
    assert reasons(narrowed, check, previous=turn1) == []
    assert reasons(narrowed.assign(advertiser=["z"]), check, previous=turn1) == [
        "row 0 (advertiser=z, spend=2) is not in the previous turn's result"]
    weekly = pd.DataFrame({"advertiser": ["a", "a"], "week": ["w1", "w2"], "spend": [1.0, 2.0]})
    assert reasons(weekly, check, previous=turn1) != []          # spend per week is not a total
    on_advertiser = Expectation(kind="subset_of_previous", columns=("advertiser",))
    assert reasons(weekly, on_advertiser, previous=turn1) == []
    assert reasons(weekly, on_advertiser, previous=None) == []    # nothing to compare with: not judged


def test_check_share_counts_checks_and_ignores_the_reference_comparison():
    checks = [values("ctr", "between", 0.0, 1.0), Expectation(kind="sorted_by", columns=("ctr",)),
              Expectation(kind="same_rows_as_solution")]
    assert check_share(CTR, checks) == (1, 2)            # sorted ascending fails, between passes
    assert check_share(None, checks) == (0, 2)


def test_results_group_by_rows_order_aware_and_within_tolerance():
    a = pd.DataFrame({"x": ["p", "q"], "y": [1.0, 2.0]})
    reordered = a.iloc[::-1].reset_index(drop=True)
    nudged = a.assign(y=[1.0 + 1e-9, 2.0])
    other = a.assign(y=[1.0, 2.5])
    assert same_result(a, reordered) and not same_result(a, reordered, ordered=True)
    assert same_result(a, nudged) and not same_result(a, other)
    assert cluster_results([a, other, reordered, nudged], ordered=False) == [[0, 2, 3], [1]]
    assert cluster_results([a, other, reordered, nudged], ordered=True) == [[0, 3], [1], [2]]
