"""The Tri-Gate filter: execution, output, judges. A candidate stops at the first reject.

- **execution** runs the CODE in the sandbox pool with the gate's timeout and
  memory; it rejects ``syntax`` (SyntaxError), ``timeout`` (wall or CPU limit) and
  ``error`` (anything the code raised, or a limit it broke), as the recipe's
  ``reject`` list says. A turn without a CODE block has nothing to run and goes on.
- **output** rejects ``incomplete`` (a missing, empty or unclosed block, or no
  ``result``), ``empty`` (zero rows) and ``mismatch`` (the result fails the turn's
  expectations against the reference solution's result for the same instance,
  computed once per instance turn). Where no reference is visible (``references
  hidden``, or a turn with checks only) ``mismatch`` means: ``check`` (the result
  fails one of the turn's checks), ``disagree`` (it is outside the majority result
  of the instance turn's candidates) or ``no_agreement`` (no result reached the
  ``agree`` share: the instance turn is set aside), see `agreement`; a candidate the
  judges reject for ignoring an asked param does not vote.
- **judge** asks the judge ensemble (see `judges`).

An accepted candidate whose result matched a reference of at most one row, or of one
value per column, carries ``thin_evidence``: a wrong query easily returns the same, and
the funnel warns with a count (`thin_reference`).

Every gate of the recipe's order is evaluated for every candidate (cheap once the
code has run; the judges run while the sandbox executes the batch), so
besides the first rejecting gate the outcome says which gates *would* have
rejected it; the funnel's confusion table uses that to show that each noise kind
is caught by the gate meant for it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from craftc.ir import BlockFormat, Expectation, Recipe
from runtime.distill.blocks import parse_turn
from runtime.distill.judges import JudgeCase, JudgeEnsemble

__all__ = ["GateCase", "GateOutcome", "TriGate", "sandbox_limits", "execution_rejection", "decide_first",
           "thin_reference"]

_EXEC_CLASSES = {
    "SyntaxError": "syntax",
    "Timeout": "timeout",
    "CpuLimit": "timeout",
    "RuntimeError": "error",
    "MemoryLimit": "error",
    "OutputLimit": "error",
    "SecurityViolation": "error",
    "WorkerCrashed": "error",
}


# A gate order without the judge gate: nothing is judged, nothing is rejected for it.
_NOT_JUDGED = SimpleNamespace(passed=True, reason="", verdicts=())


@dataclass(frozen=True)
class GateCase:
    """One candidate turn to filter, with the instance it answers."""

    candidate_id: str
    instance_id: str
    turn: int
    text: str
    ask: str
    params: dict[str, Any]
    expectations: tuple[Expectation, ...] = ()
    instance_params: dict[str, Any] = field(default_factory=dict)   # every param, for checks
    reference_visible: bool = True


@dataclass
class GateOutcome:
    """Where a candidate stopped and why; ``would_reject`` holds every gate's answer."""

    candidate_id: str
    accepted: bool
    gate: str | None = None
    reason_class: str | None = None
    reason: str = ""
    would_reject: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    judges: list[dict[str, Any]] = field(default_factory=list)
    execution: dict[str, Any] = field(default_factory=dict)
    # Set on an acceptance whose only evidence is a result equal to a reference too small
    # to tell a right query from a wrong one (see `thin_reference`); the funnel counts it.
    thin_evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {"candidate_id": self.candidate_id, "accepted": self.accepted, "gate": self.gate,
               "reason_class": self.reason_class, "reason": self.reason,
               "would_reject": self.would_reject, "reasons": self.reasons,
               "judges": self.judges, "execution": self.execution}
        if self.thin_evidence:
            out["thin_evidence"] = self.thin_evidence
        return out


def thin_reference(frame) -> str:
    """Why a reference result is too small to tell right code from wrong: at most one row,
    or one value in every column (many wrong queries return the same); "" otherwise.

    Example:
        >>> import pandas as pd
        >>> thin_reference(pd.DataFrame({"n": [3]})), thin_reference(pd.DataFrame({"a": [1, 1], "b": ["x", "x"]}))
        ('the reference result has 1 row', 'each column of the 2-row reference result holds one value')
        >>> thin_reference(pd.DataFrame({"a": [1, 2]}))
        ''
    """
    rows = len(frame)
    if rows <= 1:
        return f"the reference result has {rows} row{'s' * (rows != 1)}"
    if all(frame[column].nunique(dropna=False) <= 1 for column in frame.columns):
        return f"each column of the {rows}-row reference result holds one value"
    return ""


def decide_first(outcome: GateOutcome, order: tuple[str, ...]) -> GateOutcome:
    """Set ``accepted``, ``gate`` and the reason from ``would_reject``: the first gate in order."""
    outcome.accepted, outcome.gate, outcome.reason_class, outcome.reason = True, None, None, ""
    for gate in order:
        if outcome.would_reject.get(gate):
            outcome.accepted, outcome.gate = False, gate
            outcome.reason_class, outcome.reason = outcome.would_reject[gate], outcome.reasons.get(gate, "")
            break
    return outcome


def sandbox_limits(recipe: Recipe):
    """The sandbox limits the execution gate asks for."""
    from runtime.sandbox import SandboxLimits

    gate = recipe.gates.execution
    return SandboxLimits(wall_timeout_s=gate.timeout_s, cpu_s=max(1, math.ceil(gate.timeout_s)),
                         memory_mb=gate.memory_mb, jobs_per_process=gate.jobs_per_process,
                         secret_env=gate.secret_env)


def execution_rejection(result, reject: tuple[str, ...]) -> tuple[str, str] | None:
    """``(class, reason)`` when the execution gate rejects a sandbox result."""
    if result is None or result.ok or result.error_class == "NoResult":
        return None
    kind = _EXEC_CLASSES.get(result.error_class, "error")
    if kind not in reject:
        return None
    message = (result.error_message or "").strip().splitlines()
    detail = f"{result.error_type or result.error_class}: {message[0][:200] if message else ''}".rstrip(": ")
    return kind, detail


def _execution_summary(result) -> dict[str, Any]:
    if result is None:
        return {"ran": False}
    return {"ran": True, "ok": result.ok, "error_class": result.error_class,
            "error_type": result.error_type, "error_message": (result.error_message or "")[:500],
            "rows": result.result_rows, "columns": list(result.result_columns),
            "preview": result.result_preview, "stdout_tail": result.stdout_tail[-500:],
            "wall_s": round(result.wall_s, 4), "redacted": list(result.redacted),
            "layers": dict(sorted(result.layers.items()))}  # which isolation layers held (docs/sandbox.md)


class TriGate:
    """Runs the three gates over candidates; the pool executes code, references once."""

    def __init__(self, recipe: Recipe, pool, ensemble: JudgeEnsemble | None = None,
                 fmt: BlockFormat | None = None):
        self.recipe, self.pool = recipe, pool
        self.fmt = fmt or recipe.format
        self.gates = recipe.gates
        self.ensemble = ensemble or JudgeEnsemble.from_recipe(recipe)
        self.references: dict[tuple[str, int], Any] = {}
        # Without a visible reference: the results that vote on each instance turn, and
        # the candidates the judges reject for ignoring an asked param (they do not vote).
        self.voters: dict[tuple[str, int], list[tuple[str, Any]]] = {}
        self.off_question: set[str] = set()
        self._param_judges = {j.name for j in self.ensemble.judges if getattr(j, "kind", None) == "prompt_params"}
        # Result frames by candidate, kept only to measure against hidden references.
        self.keep_frames = False
        self.frames: dict[str, Any] = {}

    def run_references(self, jobs: dict[tuple[str, int], tuple[str, dict]]) -> dict[tuple[str, int], str]:
        """Execute each instance turn's reference code once; returns the ones that failed."""
        keys = [key for key in jobs if key not in self.references]
        results = self.pool.run_many([jobs[key] for key in keys]) if keys else []
        failed = {}
        for key, result in zip(keys, results):
            self.references[key] = result
            if not result.ok:
                failed[key] = f"{result.error_class}: {(result.error_message or '')[:200]}"
        return failed

    def _output_rejection(self, case: GateCase, parsed, result) -> tuple[str, str] | None:
        reject = self.gates.output.reject
        if "incomplete" in reject:
            if not parsed.complete:
                return "incomplete", "; ".join(parsed.problems)
            if result is None or result.result_frame is None:
                return "incomplete", "the code assigned no `result`"
        if "empty" in reject and result is not None and result.ok and result.result_rows == 0:
            return "empty", "the result has no rows"
        if "mismatch" in reject and result is not None and result.ok and case.expectations:
            from runtime.workflows import check_result
            if not case.reference_visible:
                # Checks alone; `subset_of previous` and agreement wait for the whole
                # instance turn (runtime.distill.agreement).
                checks = [e for e in case.expectations if e.kind != "subset_of_previous"]
                check = check_result(result.result_frame, None, checks, case.instance_params)
                return ("check", "; ".join(check.reasons[:3])) if not check.passed else None
            reference = self.references.get((case.instance_id, case.turn))
            if reference is not None and reference.ok:
                previous = self.references.get((case.instance_id, case.turn - 1))
                check = check_result(result.result_frame, reference.result_frame, case.expectations,
                                     case.instance_params, previous.result_frame if previous is not None else None)
                if not check.passed:
                    return "mismatch", "; ".join(check.reasons[:3])
        return None

    def _thin_evidence(self, case: GateCase) -> str:
        """For an accepted candidate whose result was compared with its reference's: why that
        comparison proves little (`thin_reference`), or ""."""
        if not case.reference_visible or not any(e.kind == "same_rows_as_solution" for e in case.expectations):
            return ""
        reference = self.references.get((case.instance_id, case.turn))
        if reference is None or not reference.ok or reference.result_frame is None:
            return ""
        return thin_reference(reference.result_frame)

    def _judge(self, cases: list[GateCase], parsed) -> list:
        """Judge verdicts, or passing stand-ins when the recipe's gate order has no judge gate."""
        if "judge" not in self.gates.order:
            return [_NOT_JUDGED] * len(cases)
        return self.ensemble.judge_many([JudgeCase(c.ask, p.plan or "", p.code or "", c.params)
                                         for c, p in zip(cases, parsed)])

    def run(self, cases: list[GateCase]) -> list[GateOutcome]:
        """Filter candidates; outcomes come back in input order."""
        return [outcome for chunk in self.run_chunks([cases]) for outcome in chunk]

    def run_chunks(self, chunks: Iterable[list[GateCase]]) -> Iterator[list[GateOutcome]]:
        """Filter chunks of candidates, yielding each chunk's outcomes in order.

        A background thread runs one chunk's code in the sandbox while this thread
        judges and checks the chunk before it, so the workers do not wait for the
        gate's own bookkeeping. At most two chunks are queued, so an interrupt
        waits for one chunk, not for the whole run.
        """
        chunks = iter(chunks)
        with ThreadPoolExecutor(max_workers=1) as background:
            pending: deque = deque()

            def submit_next() -> None:
                chunk = next(chunks, None)
                if chunk is not None:
                    parsed = [parse_turn(case.text, self.fmt) for case in chunk]
                    runnable = [i for i, p in enumerate(parsed) if p.code and p.code.strip()]
                    jobs = [(parsed[i].code, chunk[i].params) for i in runnable]
                    pending.append((chunk, parsed, runnable, background.submit(self.pool.run_many, jobs)))

            submit_next()
            try:
                while pending:
                    submit_next()  # the next chunk runs while this one is judged and checked
                    chunk, parsed, runnable, execution = pending.popleft()
                    verdicts = self._judge(chunk, parsed)
                    results: list[Any] = [None] * len(chunk)
                    for index, result in zip(runnable, execution.result()):
                        results[index] = result
                    yield [self._decide(case, turn, result, verdict)
                           for case, turn, result, verdict in zip(chunk, parsed, results, verdicts)]
            finally:
                for *_, execution in pending:
                    execution.cancel()

    def _decide(self, case: GateCase, turn, result, verdict) -> GateOutcome:
        answers = {
            "execution": execution_rejection(result, self.gates.execution.reject),
            "output": self._output_rejection(case, turn, result),
            "judge": None if verdict.passed else ("judge", verdict.reason),
        }
        outcome = GateOutcome(case.candidate_id, True, execution=_execution_summary(result),
                              judges=[{"judge": v.judge, "passed": v.passed, "reason": v.reason,
                                       **({"cost": v.cost} if v.cost is not None else {})}
                                      for v in verdict.verdicts])
        for gate in self.gates.order:
            answer = answers.get(gate)
            outcome.would_reject[gate] = answer[0] if answer else None
            if answer:
                outcome.reasons[gate] = answer[1]
        decide_first(outcome, self.gates.order)
        if outcome.accepted and "output" in self.gates.order:
            outcome.thin_evidence = self._thin_evidence(case)
        frame = result.result_frame if result is not None and result.ok else None
        if frame is not None and not case.reference_visible and "mismatch" in self.gates.output.reject \
                and not answers["execution"] and not answers["output"]:
            self.voters.setdefault((case.instance_id, case.turn), []).append((case.candidate_id, frame))
            if not verdict.passed and any(v.judge in self._param_judges and v.passed is False
                                          for v in verdict.verdicts):
                self.off_question.add(case.candidate_id)
        if frame is not None and self.keep_frames:
            self.frames[case.candidate_id] = frame
        return outcome
