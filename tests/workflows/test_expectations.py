"""check_result: forgiving about representation, strict about content."""

import datetime as dt
import decimal

import numpy as np
import pandas as pd
import pytest

from craftc.ir import Expectation
from runtime.workflows import check_result

SAME = Expectation(kind="same_rows_as_solution")
SAME_ORDERED = Expectation(kind="same_rows_as_solution", ordered=True)
REFERENCE = pd.DataFrame({"campaign": ["a", "b", "c"], "spend": [99.8, 10.0, 5.5]})


def test_identical_frames_pass():
    assert check_result(REFERENCE.copy(), REFERENCE, [SAME]) == check_result(REFERENCE, REFERENCE, [SAME])
    assert check_result(REFERENCE.copy(), REFERENCE, [SAME_ORDERED]).passed


def test_column_names_match_case_insensitively_in_any_order():
    got = pd.DataFrame({"SPEND": [99.8, 10.0, 5.5], "Campaign": ["a", "b", "c"]})
    assert check_result(got, REFERENCE, [SAME_ORDERED]).passed


def test_unordered_rows_are_a_multiset():
    shuffled = REFERENCE.iloc[[2, 0, 1]].reset_index(drop=True)
    assert check_result(shuffled, REFERENCE, [SAME]).passed
    ordered = check_result(shuffled, REFERENCE, [SAME_ORDERED])
    assert not ordered.passed
    assert ordered.reasons[0] == "row 0: campaign 'c' != 'a' (tolerance 1e-06)"


def test_a_wrong_value_is_named_with_row_column_and_tolerance():
    got = REFERENCE.copy()
    got.loc[0, "spend"] = 101.2
    check = check_result(got, REFERENCE, [SAME_ORDERED])
    assert check.reasons == ["row 0: spend 101.2 != 99.8 (tolerance 1e-06)"]


def test_tolerance_is_relative_and_absolute():
    ref = pd.DataFrame({"x": [1000.0, 0.0]})
    close = pd.DataFrame({"x": [1000.0005, 0.0000005]})
    assert check_result(close, ref, [SAME_ORDERED]).passed
    far = pd.DataFrame({"x": [1000.01, 0.0]})
    assert not check_result(far, ref, [SAME_ORDERED]).passed
    loose = Expectation(kind="same_rows_as_solution", ordered=True, tolerance=1e-3)
    assert check_result(far, ref, [loose]).passed


def test_ints_floats_decimals_and_bools_are_numbers():
    ref = pd.DataFrame({"n": [1, 2], "flag": [True, False]})
    got = pd.DataFrame({"n": [decimal.Decimal("1.0"), decimal.Decimal("2")], "flag": [1.0, 0.0]})
    assert check_result(got, ref, [SAME_ORDERED]).passed
    got_np = pd.DataFrame({"n": np.array([1.0, 2.0], dtype="float32"), "flag": [1, 0]})
    assert check_result(got_np, ref, [SAME_ORDERED]).passed


def test_dates_timestamps_and_iso_strings_are_the_same_day():
    ref = pd.DataFrame({"day": [dt.date(2024, 3, 1), dt.date(2024, 3, 2)]})
    stamps = pd.DataFrame({"day": pd.to_datetime(["2024-03-01", "2024-03-02"])})
    strings = pd.DataFrame({"day": ["2024-03-01", "2024-03-02"]})
    assert check_result(stamps, ref, [SAME_ORDERED]).passed
    assert check_result(strings, ref, [SAME_ORDERED]).passed
    wrong = pd.DataFrame({"day": pd.to_datetime(["2024-03-01", "2024-03-03"])})
    assert check_result(wrong, ref, [SAME_ORDERED]).reasons == [
        "row 1: day '2024-03-03' != '2024-03-02' (tolerance 1e-06)"
    ]


def test_nulls_equal_nulls_but_not_zero():
    ref = pd.DataFrame({"x": [1.0, None]})
    assert check_result(pd.DataFrame({"x": [1.0, np.nan]}), ref, [SAME_ORDERED]).passed
    assert not check_result(pd.DataFrame({"x": [1.0, 0.0]}), ref, [SAME_ORDERED]).passed


def test_missing_and_extra_columns_are_reported():
    got = pd.DataFrame({"campaign": ["a", "b", "c"], "clicks": [1, 2, 3]})
    assert check_result(got, REFERENCE, [SAME]).reasons == [
        "missing column `spend`", "unexpected column `clicks`",
    ]


def test_row_count_difference_is_reported():
    check = check_result(REFERENCE.head(2), REFERENCE, [SAME])
    assert check.reasons == ["the result has 2 rows; the reference has 3"]


def test_near_equal_rows_that_sort_differently_still_match():
    ref = pd.DataFrame({"k": ["x", "x"], "v": [1.0000004, 1.0000006]})
    got = pd.DataFrame({"k": ["x", "x"], "v": [1.0000006, 1.0000004]})
    assert check_result(got, ref, [SAME]).passed


def test_columns_expectation_requires_named_columns():
    expect = Expectation(kind="columns", columns=("campaign", "ctr"))
    check = check_result(REFERENCE, None, [expect])
    assert check.reasons == ["missing column `ctr` (have: campaign, spend)"]
    assert check_result(REFERENCE.rename(columns={"spend": "CTR"}), None, [expect]).passed


@pytest.mark.parametrize(
    ("rows", "low", "high", "reason"),
    [
        (3, 1, 5, None),
        (0, 1, None, "the result has 0 rows; expected at least 1"),
        (3, None, 2, "the result has 3 rows; expected at most 2"),
    ],
)
def test_row_count_bounds(rows, low, high, reason):
    expect = Expectation(kind="row_count", min_rows=low, max_rows=high)
    check = check_result(REFERENCE.head(rows), None, [expect])
    assert check.reasons == ([] if reason is None else [reason])


def test_nonempty():
    assert check_result(REFERENCE, None, [Expectation(kind="nonempty")]).passed
    assert check_result(REFERENCE.head(0), None, [Expectation(kind="nonempty")]).reasons == [
        "the result is empty; expected at least one row"
    ]


def test_a_missing_or_non_frame_result_fails_with_the_fix():
    assert check_result(None, REFERENCE, [SAME]).reasons == [
        "the result is missing: the code must assign a DataFrame to `result`"
    ]
    assert "not a DataFrame" in check_result(42, REFERENCE, [SAME]).reasons[0]


def test_a_series_result_is_accepted_as_a_one_column_frame():
    ref = pd.DataFrame({"spend": [1.0, 2.0]})
    assert check_result(pd.Series([1.0, 2.0], name="spend"), ref, [SAME_ORDERED]).passed


def test_many_mismatches_are_capped():
    ref = pd.DataFrame({"x": [float(i) for i in range(20)]})
    got = pd.DataFrame({"x": [float(i) + 1000 for i in range(20)]})
    reasons = check_result(got, ref, [SAME_ORDERED]).reasons
    assert len(reasons) == 6 and reasons[-1] == "... and 15 more"
