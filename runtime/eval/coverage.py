"""Which workflows an evaluation leaves unscored, and why; which lost all their training data.

A report that averages over the workflows it scored says nothing of the others: a
workflow the held-out draw gave no instance of the split, one that `eval { limit N }`
left out, one whose every turn was run but not scored (its reference returns no rows or
fails), and one that lost all its training data at the gate. ``report.md`` names each
(runtime.report.step), so a reader knows what the figures do not cover.
"""

from __future__ import annotations

__all__ = ["not_evaluated", "without_training_data"]


def not_evaluated(workflows: list[str], held_out: list, kept: list, excluded: dict, split: str,
                  limit: int | None) -> dict[str, str]:
    """``{workflow: why}`` for each of ``workflows`` (in recipe order) with no scored turn.

    ``held_out``: the split's tasks as the dataset step wrote them; ``kept``: those eval ran
    (after `eval { instances }` and `eval { limit }`); ``excluded``: ``(instance_id, turn)``
    of the turns run but not scored.

    >>> from types import SimpleNamespace as T
    >>> a, b, c = (T(id=f"{w}/0", workflow=w, turns=(1,)) for w in "abc")
    >>> not_evaluated(["a", "b", "c", "d"], [a, b, c], [a, b], {("b/0", 0): "no rows"}, "test", 2)
    {'b': 'every turn of its 1 instance was run but not scored (its reference returns no rows or fails)', 'c': '`eval { limit 2 }` kept other instances of the test split', 'd': 'no test instance: the held-out draw reserved none of its instances for this split'}
    """
    drawn = {t.workflow for t in held_out}
    ran: dict[str, list] = {}
    for task in kept:
        ran.setdefault(task.workflow, []).append(task)
    out = {}
    for workflow in workflows:
        tasks = ran.get(workflow)
        if workflow not in drawn:
            out[workflow] = f"no {split} instance: the held-out draw reserved none of its instances for this split"
        elif not tasks:
            out[workflow] = (f"`eval {{ limit {limit} }}` kept other instances of the {split} split" if limit
                             else f"none of its {split} instances was run")
        elif all((t.id, n) in excluded for t in tasks for n in range(len(t.turns))):
            out[workflow] = (f"every turn of its {len(tasks)} instance{'s' if len(tasks) > 1 else ''} was run but "
                             "not scored (its reference returns no rows or fails)")
    return out


def without_training_data(losses: list[dict]) -> dict[str, str]:
    """``{workflow: why}`` from the gate's losses (``funnel.json``): the whole-workflow ones.

    >>> without_training_data([{"workflow": "w", "turn": None, "reason": "0 of 4 candidates accepted", "fix": "x"},
    ...                        {"workflow": "v", "turn": 1, "reason": "reference skipped on 1 of 3", "fix": "y"}])
    {'w': '0 of 4 candidates accepted'}
    """
    return {loss["workflow"]: loss["reason"] for loss in losses if loss.get("turn") is None}
