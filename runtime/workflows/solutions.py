"""Reference solutions: a business PLAN docstring over executable CODE, both templates.

A solution file is Python whose module docstring is the ``<PLAN>`` and whose remainder
is the ``<CODE>`` (see docs/plan-dir.md). Both are ``string.Template`` texts over the
workflow's params written ``${name}``: the plan receives each value as text, the code
receives it as a Python literal (``repr``), so ``LIMIT ${n}`` inside an SQL string and
``head(${n})`` in pandas both come out right. A literal dollar sign is written ``$$``.

The template is not valid Python until it is rendered (``head(${n})``), so the
docstring is located textually rather than with ``ast``.

Example:
    >>> text = '\"\"\"Keep the top ${n} campaigns.\"\"\"\\nresult = api.query("SELECT 1").head(${n})\\n'
    >>> plan, code = render_solution(text, {"n": 3})
    >>> plan
    'Keep the top 3 campaigns.'
    >>> code
    'result = api.query("SELECT 1").head(3)\\n'
"""

from __future__ import annotations

import datetime as _dt
import inspect
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

__all__ = [
    "SolutionError",
    "split_solution",
    "render_solution",
    "load_solution_text",
    "format_value",
    "execute_code",
    "warmup_jobs",
]

# Optional leading comments and blank lines, then a triple-quoted docstring.
_DOCSTRING = re.compile(
    r'\A(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*[rR]?(?P<quote>"""|\'\'\')(?P<body>.*?)(?P=quote)[ \t]*\n?',
    re.DOTALL,
)


class SolutionError(ValueError):
    """A solution file that cannot be split or rendered; the message says how to fix it."""


def split_solution(text: str, name: str = "solution") -> tuple[str, str]:
    """Split a solution file into its PLAN template (docstring) and CODE template.

    Args:
        text: The whole solution file.
        name: What to call the file in error messages (usually its path).

    Returns:
        ``(plan_template, code_template)``; the plan is dedented like ``inspect.cleandoc``.

    Raises:
        SolutionError: The file does not start with a docstring, or has no code after it.
    """
    match = _DOCSTRING.match(text)
    if match is None:
        raise SolutionError(
            f"{name}: a reference solution must start with a module docstring holding the "
            'business PLAN; add `"""<plan in business words>"""` as its first statement'
        )
    plan = inspect.cleandoc(match.group("body"))
    code = text[match.end():].lstrip("\n")
    if not plan:
        raise SolutionError(f"{name}: the PLAN docstring is empty; describe the steps in business words")
    if not code.strip():
        raise SolutionError(f"{name}: no CODE after the PLAN docstring; the code must assign `result`")
    return plan, code


def format_value(value: Any) -> str:
    """How a param value reads in a plan or a question: ``7``, ``0.25``, ``Acme Travel``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else repr(value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return str(value)


def _substitute(template: str, values: Mapping[str, str], name: str, part: str) -> str:
    try:
        return Template(template).substitute(values)
    except KeyError as err:
        missing = err.args[0]
        known = ", ".join(f"`{key}`" for key in sorted(values)) or "none"
        raise SolutionError(
            f"{name}: the {part} uses placeholder `${{{missing}}}` but the workflow has no "
            f"param `{missing}` (params: {known}); declare `param {missing} ...` or fix the name"
        ) from None
    except ValueError as err:
        raise SolutionError(
            f"{name}: the {part} has a malformed placeholder ({err}); write params as "
            "`${name}` and a literal dollar sign as `$$`"
        ) from None


def render_solution(
    text: str, params: Mapping[str, Any], name: str = "solution"
) -> tuple[str, str]:
    """Render a solution file for one set of param values.

    Args:
        text: The solution file (docstring PLAN, then CODE), with ``${name}`` placeholders.
        params: Param values by name (ints, floats, strings).
        name: What to call the file in error messages.

    Returns:
        ``(plan, code)``: the plan with values as text, the code with Python literals.

    Raises:
        SolutionError: A placeholder names no param, or the file has no docstring.
    """
    plan_template, code_template = split_solution(text, name)
    plan = _substitute(plan_template, {k: format_value(v) for k, v in params.items()}, name, "PLAN")
    code = _substitute(code_template, {k: repr(v) for k, v in params.items()}, name, "CODE")
    return plan, code


def load_solution_text(path: str | Path) -> str:
    """Read a solution file, with a clear message when it is missing."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SolutionError(
            f"reference solution `{path}` does not exist; fix the `solution` path in the recipe"
        ) from None


def execute_code(code: str, api: Any, params: Mapping[str, Any]) -> pd.DataFrame | None:
    """Run rendered solution code in-process and return its ``result``.

    This is for trusted reference solutions (tests, instance checks); agent code goes
    through the sandbox instead. The globals are the agent's: ``api``, ``params``, ``pd``.
    """
    scope: dict[str, Any] = {"api": api, "params": dict(params), "pd": pd, "__name__": "__solution__"}
    exec(compile(code, "<solution>", "exec"), scope)  # noqa: S102 - trusted reference code
    return scope.get("result")


def warmup_jobs(instances: Iterable[Any], limit: int = 200) -> list[tuple[str, dict]]:
    """One (reference code, params) per workflow turn, for `SandboxPool(warmup=...)`.

    The sandbox runs these trusted reference solutions once in each worker before
    it forks job processes, so every job inherits warm parser, pandas and DuckDB
    state. `instances` are instance dicts as the distill step writes them, or
    `runtime.agent.AgentTask`s.
    """
    jobs, seen = [], set()
    for instance in instances:
        if isinstance(instance, Mapping):
            workflow, params = instance.get("workflow"), instance.get("params", {})
            codes = [turn.get("code") for turn in instance.get("turns", ())]
        else:
            workflow, params = instance.workflow, instance.params
            codes = [turn.reference_code for turn in instance.turns]
        for index, code in enumerate(codes):
            if (workflow, index) in seen or not code:
                continue
            seen.add((workflow, index))
            jobs.append((code, dict(params or {})))
    return jobs[:limit]
