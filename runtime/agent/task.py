"""The task an episode works on: an instance of a workflow, read from the dataset.

The dataset step writes instances as JSON; this module reads the fields the agent
loop, the rewards and the evaluation need and names what is missing, so a corrupt
or foreign file fails with a message instead of a ``KeyError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TaskTurn", "AgentTask", "TaskFormatError", "load_tasks", "read_instance_file"]


class TaskFormatError(ValueError):
    """An instance file is missing a field the agent needs."""


def _first(data: dict, *keys, default=None):
    for key in keys:
        if key in data and data[key] is not None:
            return data[key]
    return default


@dataclass(frozen=True)
class TaskTurn:
    """One question of an instance with its rendered reference solution."""

    ask: str
    reference_code: str = ""
    reference_plan: str = ""
    expectations: tuple[dict, ...] = ()
    reference_visible: bool = True        # False: the rewards and eval judge by checks
    # The params the questions up to this one ask for; None (an older instance file): all.
    asked: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AgentTask:
    """A workflow instance: parameters, one or more turns, and its evaluation split."""

    id: str
    workflow: str
    params: dict[str, Any] = field(default_factory=dict)
    turns: tuple[TaskTurn, ...] = ()
    split: str = ""

    def params_asked(self, turn_index: int) -> dict[str, Any]:
        """The params agent code may read at ``turn_index``: those the questions so far ask
        for, never a value a later question has not asked yet."""
        asked = self.turns[turn_index].asked if turn_index < len(self.turns) else None
        if asked is None:
            return dict(self.params)
        return {name: value for name, value in self.params.items() if name in asked}

    @classmethod
    def from_dict(cls, data: dict, where: str = "instance") -> "AgentTask":
        """Read one instance; accepts the dataset step's field names and close variants."""
        if not isinstance(data, dict):
            raise TaskFormatError(f"{where}: expected an object, got {type(data).__name__}")
        raw_turns = data.get("turns")
        if raw_turns is None and ("ask" in data or "question" in data):
            raw_turns = [data]          # a single-turn instance written flat
        if not raw_turns:
            raise TaskFormatError(f"{where}: no `turns`; regenerate the dataset with `craftc run --only dataset`")
        turns = []
        for n, t in enumerate(raw_turns, 1):
            ask = _first(t, "ask", "question", "prompt")
            if not isinstance(ask, str):
                raise TaskFormatError(f"{where} turn {n}: no `ask` text")
            expectations = tuple(_first(t, "expectations", "expect", default=()) or ())
            turns.append(TaskTurn(
                ask=ask,
                reference_code=_first(t, "code", "reference_code", "solution_code", default="") or "",
                reference_plan=_first(t, "plan", "reference_plan", "solution_plan", default="") or "",
                expectations=tuple(dict(e) for e in expectations),
                reference_visible=bool(t.get("reference_visible", True)),
                asked=tuple(t["asked"]) if isinstance(t.get("asked"), list) else None,
            ))
        return cls(
            id=str(_first(data, "id", "instance_id", default=where)),
            workflow=str(_first(data, "workflow", default="")),
            params=dict(_first(data, "params", default={}) or {}),
            turns=tuple(turns),
            split=str(_first(data, "split", default="")),
        )


def read_instance_file(path: Path):
    """The JSON of an instance file; a missing or malformed one is a `TaskFormatError` naming the fix."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise TaskFormatError(f"instance file {path} is missing; run the dataset step first") from None
    except json.JSONDecodeError as exc:
        raise TaskFormatError(f"instance file {path} is not valid JSON ({exc}); rerun the dataset step") from None


def load_tasks(path: str | Path) -> list[AgentTask]:
    """Read instances from a JSON list, a ``{"instances": [...]}`` object or a split map.

    A split map (``{"new_values": [...], "new_workflow": [...]}``) sets each
    instance's ``split`` from its key when the instance does not carry one.
    """
    path = Path(path)
    data = read_instance_file(path)
    items: list[tuple[str, dict]] = []
    if isinstance(data, list):
        items = [("", d) for d in data]
    elif isinstance(data, dict) and isinstance(data.get("instances"), list):
        items = [("", d) for d in data["instances"]]
    elif isinstance(data, dict):
        for split, group in sorted(data.items()):
            if isinstance(group, list):
                items += [(split, d) for d in group]
    tasks = []
    for n, (split, item) in enumerate(items):
        task = AgentTask.from_dict(item, where=f"{path.name}[{n}]")
        if split and not task.split:
            task = AgentTask(task.id, task.workflow, task.params, task.turns, split)
        tasks.append(task)
    return tasks
