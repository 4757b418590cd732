"""`eval { limit N }`: a sample of each held-out split, spread over its workflows."""

from runtime.agent import AgentTask
from runtime.eval.step import cap_per_workflow, spread_per_split
from tests.agent.warehouse import task_dict


def _tasks(split, workflows, per_workflow=2):
    out = []
    for wf in workflows:
        for i in range(per_workflow):
            task = AgentTask.from_dict({**task_dict(1, f"{wf}-{i}"), "workflow": wf, "split": split})
            out.append(task)
    return out


def test_the_limit_applies_per_split_after_the_per_workflow_cap():
    held_out = _tasks("new_values", "abcdefghij") + _tasks("new_phrasing", "abcdefghij") + _tasks("new_workflow", "z")
    capped = cap_per_workflow(held_out, 1)                  # eval { instances 1 }: one per workflow and split
    kept = spread_per_split(capped, 4)
    by_split = {s: [t.workflow for t in kept if t.split == s] for s in ("new_values", "new_phrasing", "new_workflow")}
    assert by_split == {"new_values": ["a", "c", "f", "h"], "new_phrasing": ["a", "c", "f", "h"],
                        "new_workflow": ["z"]}


def test_kept_instances_keep_their_file_order_and_no_limit_keeps_all():
    tasks = _tasks("new_values", "abc", per_workflow=3)
    assert spread_per_split(tasks, None) == tasks
    kept = spread_per_split(tasks, 3)
    assert [t.id for t in kept] == ["a-0", "b-0", "c-0"]
    assert spread_per_split(tasks, 100) == tasks
