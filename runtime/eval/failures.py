"""Why a user turn failed: one class per failed turn, decided in a fixed order.

``classify_turn`` is a pure function of a scored ``UserTurn``, its ``AgentTask``, the
reference result frame of the turn and a catalog of every workflow's reference
texts. The eval step calls it while the agent's final frames are still in memory and
stores the class on the turn (``UserTurn.failure``); the report only reads records.

The classes, in the order they are tried (the first that applies wins; see
docs/evaluation.md for the same list):

1. ``answered_another_workflow``: the agent's code (the final code, else the last
   code it wrote) is more similar to another workflow's reference code than to any
   reference of the asked workflow, by at least ``WORKFLOW_MARGIN``. Similarity is
   the Jaccard index of ``sql_words`` (identifier and keyword tokens of the queries).
   Plans are not compared: plan wording varies with the phrasing, and sibling
   workflows' plans read alike (a truncated plan of one scored 0.60 against its
   sibling's plans and 0.48 against its own), so a turn without a query is judged
   by the classes below.
2. ``exec_error``: the turn did not end on a successful execution.
3. ``empty_result``: the result has no rows while the reference has rows.
4. ``wrong_parameter``: a param value of the instance that the turn's reference code
   writes as a literal (``code_literals``) is not among the agent code's literals,
   and the code does not read it from ``params[...]``. (A different value of the
   same param shows up here: the asked value is then missing.)
5. ``wrong_metric``: a *metric* column (numeric) differs between the result and the
   expected columns: the reference frame's columns when the turn compares with the
   reference, else the columns its ``columns`` checks name (without a reference
   frame to tell, a missing column counts as a metric).
6. ``missing_filter``: a value the reference filters on (``literal_values``: SQL
   ``WHERE``/``HAVING`` literals and Python comparison constants) is absent from the
   agent's code, or the columns match, the result has more rows than the reference
   and the agent's queries make fewer ``WHERE``/``HAVING`` comparisons.
7. ``wrong_grouping``: the columns differ only in dimension (non-numeric) columns, or
   they match, the row count differs from the reference and the queries group by
   other columns than the reference's (``group_keys``). A row count that differs
   with the same grouping and filters (say, a shifted date window) is ``other``.
8. ``plan_code_mismatch``: the turn's plan/code consistency is below
   ``CONSISTENCY_THRESHOLD``.
9. ``other``: a wrong answer of none of the kinds above (e.g. right shape, wrong values).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from runtime.agent import AgentTask, Episode, UserTurn
from runtime.eval.scoring import keeps_constraints
from craftc.sql_facts import code_literals, filter_predicates, group_keys, literal_values, normalise_literal, sql_words

__all__ = ["FAILURE_CLASSES", "CONSISTENCY_THRESHOLD", "WORKFLOW_MARGIN", "ReferenceCatalog", "classify_turn",
           "classify_episode", "failure_summary", "turn_text"]

FAILURE_CLASSES = ("answered_another_workflow", "exec_error", "empty_result", "wrong_parameter", "wrong_metric",
                   "missing_filter", "wrong_grouping", "plan_code_mismatch", "other")
# Sibling workflows share most of their query words (a drilldown's first turn is often
# another workflow's whole answer), so "closer to another workflow" needs a clear lead.
WORKFLOW_MARGIN = 0.1
# Plan/code agreement is half a 1/0 judge verdict: below 0.5 the judge said "mismatch"
# or the graded half found little overlap.
CONSISTENCY_THRESHOLD = 0.5

_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if (a or b) else 0.0


@dataclass
class ReferenceCatalog:
    """Every workflow's reference code as query-word sets: ``workflow -> [words, ...]``."""

    texts: dict[str, list[frozenset]] = field(default_factory=dict)

    def add(self, workflow: str, code: str) -> None:
        words = frozenset(sql_words(code))
        bucket = self.texts.setdefault(workflow, [])
        if words and words not in bucket:
            bucket.append(words)

    @classmethod
    def build(cls, tasks: list[AgentTask], solutions: dict[str, list[str]] | None = None) -> "ReferenceCatalog":
        """From the tasks' reference turns, plus solution files (``solutions/<workflow>/<n>.py``
        templates) for workflows the tasks do not cover."""
        from runtime.workflows.solutions import SolutionError, split_solution

        catalog = cls()
        for task in tasks:
            for turn in task.turns:
                catalog.add(task.workflow, turn.reference_code)
        for workflow, texts in (solutions or {}).items():
            if workflow in catalog.texts:
                continue
            for text in texts:
                try:
                    _, code = split_solution(text, workflow)
                except SolutionError:
                    continue
                # `${n}` is not Python until rendered; a stand-in literal keeps the query readable.
                catalog.add(workflow, _PLACEHOLDER.sub("0", code).replace("$$", "$"))
        return catalog

    def closest_other(self, workflow: str, code: str | None) -> tuple[str, float, float] | None:
        """``(other workflow, its similarity, the asked workflow's similarity)`` when the
        best other workflow beats every reference of ``workflow`` by ``WORKFLOW_MARGIN``."""
        words = frozenset(sql_words(code or ""))
        if not words or not self.texts.get(workflow):
            return None
        own = max(_jaccard(words, entry) for entry in self.texts[workflow])
        best, best_wf = -1.0, None
        for other, entries in sorted(self.texts.items()):
            if other == workflow or not entries:
                continue
            score = max(_jaccard(words, entry) for entry in entries)
            if score > best:
                best, best_wf = score, other
        if best_wf is not None and best >= own + WORKFLOW_MARGIN:
            return best_wf, best, own
        return None


def turn_text(turn: UserTurn) -> tuple[str | None, str | None]:
    """The agent's ``(plan, code)`` a failure is judged on: the successful call's, else
    the last call with code, else the first call's plan."""
    if turn.final_ok and turn.final_code:
        return turn.final_plan, turn.final_code
    last = next((c for c in reversed(turn.calls) if c.code), None)
    if last is not None:
        return last.plan, last.code
    return (turn.calls[0].plan if turn.calls else None), None


@dataclass(frozen=True)
class _Shape:
    """A result's rows and columns (lower-case), with the numeric ones when the frame is known."""

    rows: int
    columns: tuple[str, ...]
    numeric: frozenset[str] | None = None     # None: only the names are known (a stored record)

    @classmethod
    def of_frame(cls, frame) -> "_Shape | None":
        import pandas as pd

        if isinstance(frame, pd.Series):
            frame = frame.reset_index() if frame.index.name else frame.to_frame()
        if not isinstance(frame, pd.DataFrame):
            return None
        numeric = {str(c).lower() for c in frame.columns
                   if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])}
        return cls(len(frame), tuple(str(c).lower() for c in frame.columns), frozenset(numeric))

    def is_metric(self, column: str) -> bool:
        return self.numeric is None or column in self.numeric


def _result_shape(turn: UserTurn) -> _Shape | None:
    if turn.final_frame is not None:
        return _Shape.of_frame(turn.final_frame)
    ok = next((c.exec for c in reversed(turn.calls) if c.exec is not None and c.exec.ok), None)
    return _Shape(ok.rows, tuple(c.lower() for c in ok.columns)) if ok else None


def _reads_param(code: str, name: str) -> bool:
    return re.search(rf"""params\s*(\[\s*|\.get\(\s*)['"]{re.escape(name)}['"]""", code) is not None


def _column_differences(result: _Shape, reference: _Shape | None, spec) -> tuple[set, set, bool]:
    """``(differing metric columns, differing dimension columns, compared with the reference)``."""
    from craftc.ir import REFERENCE_KINDS

    kinds = {e.get("kind") for e in spec.expectations}
    have = set(result.columns)
    if reference is not None and kinds & set(REFERENCE_KINDS):
        want = set(reference.columns)
        missing, extra = want - have, have - want
        metric = {c for c in missing if reference.is_metric(c)} | {c for c in extra if result.is_metric(c)}
        return metric, (missing | extra) - metric, True
    want = {str(c).lower() for e in spec.expectations if e.get("kind") == "columns" for c in e.get("columns", ())}
    missing = want - have
    metric = {c for c in missing if reference is None or c not in reference.columns or reference.is_metric(c)}
    return metric, missing - metric, False


def classify_turn(turn: UserTurn, task: AgentTask, reference=None, catalog: ReferenceCatalog | None = None) -> str | None:
    """The failure class of a scored user turn (None when it passed).

    Args:
        turn: A user turn after ``score_episode`` (``passed`` and ``consistency`` set);
            its ``final_frame`` when in memory, else its records' shape is used.
        task: The instance the turn belongs to.
        reference: The turn's reference result frame (None where unknown or failed).
        catalog: Every workflow's reference texts; None skips ``answered_another_workflow``.
    """
    return _classify(turn, task, reference, catalog)[0]


def _classify(turn: UserTurn, task: AgentTask, reference, catalog: ReferenceCatalog | None
              ) -> tuple[str | None, str | None]:
    """``(failure class, the workflow whose code answered)``: the second is set only for
    ``answered_another_workflow``, found by the same catalog lookup that classed the turn."""
    if turn.final_ok and turn.passed:
        return None, None
    _, code = turn_text(turn)
    other = catalog.closest_other(task.workflow, code) if catalog is not None else None
    if other is not None:
        return "answered_another_workflow", other[0]
    return _classify_own_workflow(turn, task, reference, code), None


def _classify_own_workflow(turn: UserTurn, task: AgentTask, reference, code: str | None) -> str:
    """The class of a failed turn whose code is its own workflow's (or no workflow's)."""
    spec = task.turns[turn.index]
    result = _result_shape(turn) if turn.final_ok else None
    if result is None:
        return "exec_error"
    ref = _Shape.of_frame(reference) if reference is not None else None
    if ref is not None and ref.rows > 0 and result.rows == 0:
        return "empty_result"
    code = code or ""
    agent_literals = code_literals(code)
    reference_literals = code_literals(spec.reference_code)
    read_from_params: set[str] = set()                  # values the code takes from `params[...]`
    for name, value in sorted(task.params.items()):
        wanted = {normalise_literal(v) for v in (value if isinstance(value, (list, tuple)) else [value])}
        if _reads_param(code, name):
            read_from_params |= wanted
            continue
        if (wanted & reference_literals) - agent_literals:   # a value the reference writes literally
            return "wrong_parameter"
    metric, dimension, compared = _column_differences(result, ref, spec)
    if metric:
        return "wrong_metric"
    columns_match = not dimension
    if not keeps_constraints(code, literal_values(spec.reference_code) - read_from_params):
        return "missing_filter"
    if (compared and columns_match and result.rows > ref.rows
            and filter_predicates(code) < filter_predicates(spec.reference_code)):
        return "missing_filter"
    if dimension or (compared and result.rows != ref.rows
                     and group_keys(code) != group_keys(spec.reference_code)):
        return "wrong_grouping"
    if turn.consistency is not None and turn.consistency < CONSISTENCY_THRESHOLD:
        return "plan_code_mismatch"
    return "other"


def classify_episode(episode: Episode, task: AgentTask, references: list, catalog: ReferenceCatalog | None = None
                     ) -> Episode:
    """Set ``failure`` on every user turn of a scored episode (None on turns that passed), and
    on a turn answered with another workflow's code, which workflow (``answered_workflow``)."""
    for turn in episode.turns:
        turn.failure, turn.answered_workflow = _classify(turn, task, references[turn.index], catalog)
    return episode


def _excerpt(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_summary(episodes: list[Episode]) -> dict:
    """Counts per class over the failed user turns, the first example of each class, and
    (``answered_instead``) how many turns of each asked workflow another one's code answered.

    Reads only records (``UserTurn.failure``, ``answered_workflow``), so stored episodes give
    the same summary.
    """
    counts = dict.fromkeys(FAILURE_CLASSES, 0)
    examples: dict[str, dict] = {}
    instead: Counter = Counter()        # (asked workflow, answered workflow) -> turns
    failed = 0
    for episode in episodes:
        for turn in episode.turns:
            if not turn.failure:
                continue
            failed += 1
            counts[turn.failure] = counts.get(turn.failure, 0) + 1
            if turn.answered_workflow:
                instead[(episode.workflow, turn.answered_workflow)] += 1
            if turn.failure not in examples:
                plan, code = turn_text(turn)
                examples[turn.failure] = {"instance_id": episode.instance_id, "workflow": episode.workflow,
                                          "split": episode.split, "turn": turn.index + 1,
                                          "question": _excerpt(turn.ask, 200), "plan": _excerpt(plan, 160),
                                          "code": _excerpt(code, 240)}
    summary = {"failed_turns": failed, "counts": counts, "examples": {c: examples[c] for c in counts if c in examples}}
    if instead:     # which workflows the answers went to: a model that recalls a few of them instead
        summary["answered_instead"] = [{"asked": asked, "answered": answered, "turns": n}
                                       for (asked, answered), n in sorted(instead.items(), key=lambda x: (-x[1], x[0]))]
    return summary
