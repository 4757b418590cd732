"""Judge a result DataFrame against a workflow's expectations and its reference result.

The comparison is deliberately forgiving about representation and strict about
content: column names match case-insensitively and in any order; ints, floats,
decimals and booleans are all numbers compared within the expectation's tolerance
(``|a - b| <= tol + tol * |b|``); dates, midnight timestamps and ISO date strings are
the same day. Rows are a multiset unless the expectation is ``ordered``.

Example:
    >>> import pandas as pd
    >>> from craftc.ir import Expectation
    >>> ref = pd.DataFrame({"campaign": ["a", "b"], "spend": [99.8, 10.0]})
    >>> got = pd.DataFrame({"Spend": [10.0, 101.2], "CAMPAIGN": ["b", "a"]})
    >>> check = check_result(got, ref, [Expectation(kind="same_rows_as_solution")])
    >>> check.passed, check.reasons
    (False, ['row 0: spend 101.2 != 99.8 (tolerance 1e-06)'])
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from craftc.ir import REFERENCE_KINDS, Expectation
from runtime.workflows.checks import CHECK_KINDS_AT_RUNTIME, judge_check

__all__ = ["CheckResult", "check_result", "check_share", "normalise_frame"]

MAX_REASONS = 5  # a long list of row mismatches hides the first, most useful one


@dataclass(frozen=True)
class CheckResult:
    """Whether a result passed, and one human-readable reason per failed check."""

    passed: bool
    reasons: list[str] = field(default_factory=list)


def check_result(
    actual: Any, reference: Any, expectations: Iterable[Expectation],
    params: dict[str, Any] | None = None, previous: Any = None,
) -> CheckResult:
    """Check ``actual`` against every expectation (and ``reference`` where one needs it).

    Args:
        actual: The result the code under test assigned (a DataFrame, a Series, or None).
        reference: The reference solution's result for the same params.
        expectations: The turn's expectations and checks.
        params: The instance's param values, for checks that name a ``{param}``.
        previous: The previous turn's result, for ``subset_of_previous`` (None: not judged).

    Returns:
        A ``CheckResult``; ``reasons`` is empty exactly when ``passed``.
    """
    expectations = list(expectations)
    actual_frame, problem = _as_frame(actual, "the result")
    if problem:
        return CheckResult(False, [problem])
    previous_frame = _as_frame(previous, "")[0] if previous is not None else None
    reasons: list[str] = []
    for expectation in expectations:
        reasons.extend(_check_one(actual_frame, reference, expectation, params or {}, previous_frame))
    return CheckResult(not reasons, reasons)


def check_share(actual: Any, expectations: Iterable[Expectation], params: dict[str, Any] | None = None,
                previous: Any = None) -> tuple[int, int]:
    """``(passed, total)`` over the checks among ``expectations`` (those needing no reference).

    A result that is not a DataFrame passes none. The comparison with a reference is
    not counted: this is the share R_outcome uses where no reference is visible.
    """
    checks = [e for e in expectations if e.kind not in REFERENCE_KINDS]
    frame, problem = _as_frame(actual, "the result")
    if problem:
        return 0, len(checks)
    previous_frame = _as_frame(previous, "")[0] if previous is not None else None
    passed = sum(not _check_one(frame, None, e, params or {}, previous_frame) for e in checks)
    return passed, len(checks)


def _as_frame(value: Any, what: str) -> tuple[pd.DataFrame | None, str | None]:
    if value is None:
        return None, f"{what} is missing: the code must assign a DataFrame to `result`"
    if isinstance(value, pd.Series):
        return value.reset_index() if value.index.name else value.to_frame(), None
    if isinstance(value, pd.DataFrame):
        return value, None
    return None, f"{what} is a {type(value).__name__}, not a DataFrame; assign a DataFrame to `result`"


def _check_one(actual: pd.DataFrame, reference: Any, expectation: Expectation, params: dict[str, Any],
               previous: pd.DataFrame | None) -> list[str]:
    if expectation.kind == "nonempty":
        return [] if len(actual) else ["the result is empty; expected at least one row"]
    if expectation.kind == "columns":
        return _check_columns(actual, expectation.columns)
    if expectation.kind in CHECK_KINDS_AT_RUNTIME:
        missing = [p for p in (expectation.min_rows_param, expectation.max_rows_param) if p and p not in params]
        missing += [v.param for v in expectation.operands if v.param is not None and v.param not in params]
        if missing:
            return [f"the check needs param `{missing[0]}`, which the instance does not have"]
        return judge_check(actual, expectation, params, previous)
    reference_frame, problem = _as_frame(reference, "the reference result")
    if problem:
        return [problem]
    return _check_same_rows(actual, reference_frame, expectation)


def _check_columns(actual: pd.DataFrame, required: Sequence[str]) -> list[str]:
    have = {str(name).lower() for name in actual.columns}
    missing = [name for name in required if name.lower() not in have]
    if not missing:
        return []
    listed = ", ".join(str(name) for name in actual.columns) or "no columns"
    return [f"missing column `{name}` (have: {listed})" for name in missing]


# ---------------------------------------------------------------- same rows


def _check_same_rows(
    actual: pd.DataFrame, reference: pd.DataFrame, expectation: Expectation
) -> list[str]:
    ref_names = [str(name).lower() for name in reference.columns]
    act_names = [str(name).lower() for name in actual.columns]
    missing = [name for name in ref_names if name not in act_names]
    extra = [name for name in act_names if name not in ref_names]
    reasons = [f"missing column `{name}`" for name in missing]
    reasons += [f"unexpected column `{name}`" for name in extra]
    if len(set(act_names)) != len(act_names):
        reasons.append("duplicate column names in the result")
    if reasons:
        return reasons
    if len(actual) != len(reference):
        return [f"the result has {len(actual)} rows; the reference has {len(reference)}"]
    ref_rows = normalise_frame(reference)
    act_frame = actual.copy()
    act_frame.columns = act_names
    act_rows = normalise_frame(act_frame[ref_names])
    tolerance = expectation.tolerance
    if not expectation.ordered:
        ref_rows, act_rows = sorted(ref_rows, key=_sort_key), sorted(act_rows, key=_sort_key)
    mismatches = _pairwise_mismatches(act_rows, ref_rows, ref_names, tolerance)
    if mismatches and not expectation.ordered and _multiset_match(act_rows, ref_rows, tolerance):
        return []  # rounding put near-equal rows in different sort positions
    if len(mismatches) > MAX_REASONS:
        mismatches = mismatches[:MAX_REASONS] + [f"... and {len(mismatches) - MAX_REASONS} more"]
    return mismatches


def normalise_frame(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows as tuples of comparable values: floats, ISO date strings, strings, or None."""
    columns = [_normalise_column(frame.iloc[:, i]) for i in range(frame.shape[1])]
    return list(zip(*columns)) if columns else [() for _ in range(len(frame))]


def _normalise_column(series: pd.Series) -> list[Any]:
    if pd.api.types.is_datetime64_any_dtype(series):
        return [_normalise_value(value) for value in series]
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        return [None if pd.isna(value) else float(value) for value in series]
    return [_normalise_value(value) for value in series]


def _normalise_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating, decimal.Decimal)):
        return float(value)
    if isinstance(value, (pd.Timestamp, _dt.datetime)):
        stamp = pd.Timestamp(value)
        return stamp.date().isoformat() if stamp == stamp.normalize() else stamp.isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    text = str(value)
    if len(text) >= 10 and text[4:5] == "-" and text[7:8] == "-" and text[:4].isdigit():
        try:
            return _normalise_value(pd.Timestamp(text))
        except ValueError:
            return text
    return text


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    # Type tag first so None, numbers and text never compare with each other; numbers
    # are rounded so tiny float noise does not reorder rows.
    key = []
    for value in row:
        if value is None:
            key.append((0, 0.0, ""))
        elif isinstance(value, float):
            key.append((1, float(f"{value:.6g}"), ""))
        else:
            key.append((2, 0.0, value))
    return tuple(key)


def _values_equal(actual: Any, expected: Any, tolerance: float) -> bool:
    if isinstance(actual, float) and isinstance(expected, float):
        return abs(actual - expected) <= tolerance + tolerance * abs(expected)
    return actual == expected


def _pairwise_mismatches(
    actual: list[tuple], reference: list[tuple], names: list[str], tolerance: float
) -> list[str]:
    reasons = []
    for index, (got, want) in enumerate(zip(actual, reference)):
        for name, a, b in zip(names, got, want):
            if not _values_equal(a, b, tolerance):
                reasons.append(
                    f"row {index}: {name} {_show(a)} != {_show(b)} (tolerance {tolerance:g})"
                )
    return reasons


def _multiset_match(actual: list[tuple], reference: list[tuple], tolerance: float) -> bool:
    if len(actual) > 2000:  # quadratic matching is only a fallback for small results
        return False
    remaining = list(actual)
    for want in reference:
        for index, got in enumerate(remaining):
            if all(_values_equal(a, b, tolerance) for a, b in zip(got, want)):
                del remaining[index]
                break
        else:
            return False
    return True


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:g}" if value.is_integer() else f"{value!r}"
    return repr(value)
