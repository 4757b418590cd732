"""Checks: properties a result must have on its own, judged without a reference result.

The recipe's ``check`` lines (``craftc.result_checks``) arrive here as
:class:`craftc.ir.Expectation` of kinds ``row_count`` (literal or param bounds),
``sorted_by``, ``values`` and ``subset_of_previous``; ``columns`` and ``nonempty`` are
judged in :mod:`runtime.workflows.expectations`. Values are compared as
:func:`~runtime.workflows.expectations.normalise_frame` makes them (numbers as floats,
dates as ISO text), numbers within the check's tolerance (``tol + tol * |b|``);
nulls are not judged by a value predicate (SQL's ``x / 0`` is null, not a wrong answer).

Example:
    >>> import pandas as pd
    >>> from craftc.ir import CheckValue, Expectation
    >>> frame = pd.DataFrame({"campaign": ["a", "b"], "ctr": [0.4, 1.2]})
    >>> check = Expectation(kind="values", column="ctr", op="between",
    ...                     operands=(CheckValue(literal=0.0), CheckValue(literal=1.0)))
    >>> judge_check(frame, check, {})
    ['ctr: 1 of 2 values not between 0 and 1 (first: 1.2)']
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pandas as pd

from craftc.ir import CheckValue, Expectation

__all__ = ["CHECK_KINDS_AT_RUNTIME", "judge_check", "same_result", "find_column"]

CHECK_KINDS_AT_RUNTIME = ("row_count", "sorted_by", "values", "subset_of_previous")
_COMPARE = {
    "==": lambda a, b, eq: eq(a, b), "!=": lambda a, b, eq: not eq(a, b),
    "<": lambda a, b, eq: a < b and not eq(a, b), "<=": lambda a, b, eq: a <= b or eq(a, b),
    ">": lambda a, b, eq: a > b and not eq(a, b), ">=": lambda a, b, eq: a >= b or eq(a, b),
}


def find_column(frame: pd.DataFrame, name: str) -> int | None:
    """Position of a column, matched case-insensitively, or None."""
    wanted = name.lower()
    return next((i for i, c in enumerate(frame.columns) if str(c).lower() == wanted), None)


def _column_values(frame: pd.DataFrame, name: str) -> list[Any] | None:
    from runtime.workflows.expectations import normalise_frame

    at = find_column(frame, name)
    if at is None:
        return None
    return [row[0] for row in normalise_frame(frame.iloc[:, [at]])]


def _resolve(value: CheckValue, params: dict[str, Any]) -> Any:
    from runtime.workflows.expectations import _normalise_value

    raw = params.get(value.param) if value.param is not None else value.literal
    return _normalise_value(raw)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def judge_check(frame: pd.DataFrame, check: Expectation, params: dict[str, Any],
                previous: pd.DataFrame | None = None) -> list[str]:
    """Reasons ``frame`` fails one check (empty when it passes).

    Args:
        frame: The result.
        check: A check kind of :data:`CHECK_KINDS_AT_RUNTIME`.
        params: The instance's param values (for ``{param}`` operands and row bounds).
        previous: The previous turn's result, for ``subset_of_previous`` (None: not judged).
    """
    if check.kind == "row_count":
        return _row_count(frame, check, params)
    if check.kind == "sorted_by":
        return _sorted_by(frame, check)
    if check.kind == "values":
        return _values(frame, check, params)
    if check.kind == "subset_of_previous":
        return [] if previous is None else _subset(frame, previous, check)
    raise ValueError(f"not a check kind: {check.kind}")


def _row_count(frame: pd.DataFrame, check: Expectation, params: dict[str, Any]) -> list[str]:
    low = check.min_rows if check.min_rows_param is None else int(params[check.min_rows_param])
    high = check.max_rows if check.max_rows_param is None else int(params[check.max_rows_param])
    rows = len(frame)
    if low is not None and rows < low:
        return [f"the result has {rows} rows; expected at least {low}"]
    if high is not None and rows > high:
        return [f"the result has {rows} rows; expected at most {high}"]
    return []


def _equal(tolerance: float):
    def eq(a: Any, b: Any) -> bool:
        if isinstance(a, float) and isinstance(b, float):
            return abs(a - b) <= tolerance + tolerance * abs(b)
        return a == b
    return eq


def _comparable(a: Any, b: Any) -> bool:
    return (isinstance(a, float) and isinstance(b, float)) or (isinstance(a, str) and isinstance(b, str))


def _sorted_by(frame: pd.DataFrame, check: Expectation) -> list[str]:
    name = check.columns[0]
    values = _column_values(frame, name)
    if values is None:
        return [f"missing column `{name}`"]
    eq = _equal(check.tolerance)
    present = [v for v in values if v is not None]
    for index, (a, b) in enumerate(zip(present, present[1:])):
        if not _comparable(a, b):
            return [f"{name}: values of different types cannot be ordered"]
        wrong = (a < b and not eq(a, b)) if check.descending else (a > b and not eq(a, b))
        if wrong:
            order = "descending" if check.descending else "ascending"
            return [f"not sorted by {name} {order}: row {index + 1} ({_show(b)}) after {_show(a)}"]
    return []


def _values(frame: pd.DataFrame, check: Expectation, params: dict[str, Any]) -> list[str]:
    name = check.column or ""
    values = _column_values(frame, name)
    if values is None:
        return [f"missing column `{name}`"]
    operands = [_resolve(v, params) for v in check.operands]
    if check.op == "within_days":
        return _within_days(name, values, operands[0])
    eq = _equal(check.tolerance)
    if check.op == "between":
        low, high = operands
        test = lambda v: _comparable(v, low) and _COMPARE[">="](v, low, eq) and _COMPARE["<="](v, high, eq)  # noqa: E731
        wanted = f"between {_show(low)} and {_show(high)}"
    else:
        (target,) = operands
        if check.op in ("==", "!="):
            test = lambda v: _COMPARE[check.op](v, target, eq)  # noqa: E731
        else:
            test = lambda v: _comparable(v, target) and _COMPARE[check.op](v, target, eq)  # noqa: E731
        wanted = f"{check.op} {_show(target)}"
    bad = [v for v in values if v is not None and not test(v)]
    if not bad:
        return []
    judged = sum(v is not None for v in values)
    return [f"{name}: {len(bad)} of {judged} values not {wanted} (first: {_show(bad[0])})"]


def _within_days(name: str, values: list[Any], days: Any) -> list[str]:
    dates = []
    for v in values:
        if v is None:
            continue
        try:
            dates.append(_dt.date.fromisoformat(str(v)[:10]))
        except ValueError:
            return [f"{name}: `{v}` is not a date"]
    if not dates or not isinstance(days, float):
        return []
    span = (max(dates) - min(dates)).days
    if span >= days:
        return [f"{name}: dates span {span + 1} days ({min(dates)} to {max(dates)}); expected at most {days:g}"]
    return []


def _subset(frame: pd.DataFrame, previous: pd.DataFrame, check: Expectation) -> list[str]:
    from runtime.workflows.expectations import normalise_frame

    mine = {str(c).lower(): i for i, c in enumerate(frame.columns)}
    theirs = {str(c).lower(): i for i, c in enumerate(previous.columns)}
    names = [c.lower() for c in check.columns] or [c for c in mine if c in theirs]
    missing = [n for n in names if n not in mine or n not in theirs]
    if missing or not names:
        return [f"no column `{missing[0]}` in both turns" if missing else "no column in common with the previous turn"]
    rows = normalise_frame(frame.iloc[:, [mine[n] for n in names]])
    earlier = normalise_frame(previous.iloc[:, [theirs[n] for n in names]])
    eq = _equal(check.tolerance)
    for index, row in enumerate(rows):
        if not any(all(eq(a, b) for a, b in zip(row, other)) for other in earlier):
            shown = ", ".join(f"{n}={_show(v)}" for n, v in zip(names, row))
            return [f"row {index} ({shown}) is not in the previous turn's result"]
    return []


def same_result(a: pd.DataFrame, b: pd.DataFrame, ordered: bool = False, tolerance: float = 1e-6) -> bool:
    """Whether two results hold the same rows, as ``expect same_rows`` compares them."""
    from runtime.workflows.expectations import _check_same_rows

    return not _check_same_rows(a, b, Expectation(kind="same_rows_as_solution", ordered=ordered,
                                                  tolerance=tolerance))
