"""``check`` lines: what a result must satisfy on its own, lowered to :class:`Expectation`.

A check needs no reference solution, so a workflow can be judged by its checks alone
(the runtime groups candidates by result for the rest, see docs/distill.md):

| line | meaning |
| --- | --- |
| ``check columns (a, b)`` | the result has these columns (any case, any order) |
| ``check min_rows 1`` / ``check max_rows {n}`` | row bounds, a number or a param |
| ``check nonempty`` | at least one row |
| ``check sorted_by ctr desc`` | rows ordered by one column (``asc`` by default) |
| ``check all ctr between 0 and 1`` | every value of a column is in a range |
| ``check all spend >= 0`` | every value compares so (``== != < <= > >=``) |
| ``check all advertiser == {advertiser}`` | every value is the param's value |
| ``check all day within {days} days`` | the column's dates span at most that many days |
| ``check subset_of previous [on (a, b)]`` | every row is a row of the previous turn's result |

Lowering is lenient like the rest of :mod:`craftc.lower`: a malformed line lowers to
None and :mod:`craftc.check.result_checks` says why.
"""

from __future__ import annotations

from craftc.ir import CheckValue, Expectation
from craftc.syntax import ExpectDecl, Value

__all__ = ["CHECK_KINDS", "CHECK_USAGE", "lower_check", "check_operands"]

CHECK_USAGE: dict[str, str] = {
    "columns": "check columns (campaign, ctr)",
    "min_rows": "check min_rows 1",
    "max_rows": "check max_rows {n}",
    "nonempty": "check nonempty",
    "sorted_by": "check sorted_by ctr desc",
    "all": "check all ctr between 0 and 1` or `check all spend >= 0` or `check all day within {days} days",
    "subset_of": "check subset_of previous [on (advertiser)]",
}
CHECK_KINDS: tuple[str, ...] = tuple(CHECK_USAGE)


def _operand(v) -> CheckValue | None:
    if not isinstance(v, Value):
        return None
    if v.kind == "param":
        return CheckValue(param=v.python, span=v.span)
    if v.kind == "number":
        return CheckValue(literal=float(v.python), span=v.span)
    if v.kind == "string":
        return CheckValue(literal=v.python, span=v.span)
    return None


def _is(v, kind: str, text: str | None = None) -> bool:
    return isinstance(v, Value) and v.kind == kind and (text is None or v.text == text)


def lower_check(e: ExpectDecl) -> Expectation | None:
    """IR of a ``check`` line, or None when it is malformed (the checker says why)."""
    args = list(e.args)
    if e.kind == "columns" and len(args) == 1 and isinstance(args[0], tuple):
        return Expectation(kind="columns", columns=args[0], span=e.span)
    if e.kind in ("min_rows", "max_rows") and len(args) == 1:
        a = args[0]
        if _is(a, "param"):
            return Expectation(kind="row_count", span=e.span, **{f"{e.kind}_param": a.python})
        if _is(a, "number") and isinstance(a.python, int) and a.python >= 0:
            return Expectation(kind="row_count", span=e.span, **{e.kind: a.python})
        return None
    if e.kind == "nonempty" and not args:
        return Expectation(kind="nonempty", span=e.span)
    if e.kind == "sorted_by" and args and _is(args[0], "name") and len(args) <= 2:
        direction = args[1].text if len(args) == 2 and _is(args[1], "name") else "asc"
        if len(args) == 2 and direction not in ("asc", "desc"):
            return None
        return Expectation(kind="sorted_by", columns=(args[0].text,), descending=direction == "desc",
                           span=e.span)
    if e.kind == "all":
        return _lower_all(args, e)
    if e.kind == "subset_of" and args and _is(args[0], "name", "previous"):
        if len(args) == 1:
            return Expectation(kind="subset_of_previous", span=e.span)
        if len(args) == 3 and _is(args[1], "name", "on") and isinstance(args[2], tuple):
            return Expectation(kind="subset_of_previous", columns=args[2], span=e.span)
    return None


def _lower_all(args: list, e: ExpectDecl) -> Expectation | None:
    if len(args) < 3 or not _is(args[0], "name"):
        return None
    column, op = args[0].text, args[1]
    if _is(op, "compare") and len(args) == 3 and (value := _operand(args[2])) is not None:
        return Expectation(kind="values", column=column, op=op.text, operands=(value,), span=e.span)
    if _is(op, "name", "between") and len(args) == 5 and _is(args[3], "name", "and"):
        low, high = _operand(args[2]), _operand(args[4])
        if low is not None and high is not None:
            return Expectation(kind="values", column=column, op="between", operands=(low, high), span=e.span)
    if _is(op, "name", "within") and len(args) == 4 and _is(args[3], "name", "days"):
        window = _operand(args[2])
        if window is not None:
            return Expectation(kind="values", column=column, op="within_days", operands=(window,), span=e.span)
    return None


def check_operands(e: Expectation) -> tuple[CheckValue, ...]:
    """Every operand of a lowered check, row bounds included (for param checks)."""
    bounds = tuple(CheckValue(param=p) for p in (e.min_rows_param, e.max_rows_param) if p)
    return e.operands + bounds

