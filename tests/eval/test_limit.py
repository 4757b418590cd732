"""`eval { limit N }`: a sample of each held-out split, stratified over its workflows, a
conversation among them when the split holds one."""

from runtime.agent import AgentTask
from runtime.eval.metrics import summarise
from runtime.agent.episode import Episode, UserTurn
from runtime.report.table import build_table, markdown_table
from runtime.eval.step import cap_per_workflow, spread_per_split
from tests.agent.warehouse import task_dict


def _tasks(split, workflows, per_workflow=2, turns=2):
    out = []
    for wf in workflows:
        for i in range(per_workflow):
            task = task_dict(1, f"{wf}-{i}")
            task["turns"] = task["turns"][:turns]
            out.append(AgentTask.from_dict({**task, "workflow": wf, "split": split}))
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


def test_a_limit_below_the_workflow_count_keeps_a_conversation():
    # five single-question workflows, then a conversation: `limit 2` used to keep a and c only
    tasks = _tasks("new_values", "abcde", per_workflow=3, turns=1) + _tasks("new_values", "t", per_workflow=3)
    kept = spread_per_split(tasks, 2)
    assert [t.workflow for t in kept] == ["a", "t"]
    assert [len(t.turns) for t in kept] == [1, 2]
    # no conversation in the split: evenly spaced over the workflows
    assert [t.workflow for t in spread_per_split(_tasks("new_values", "abcde", turns=1), 2)] == ["a", "c"]


def test_a_limit_above_the_workflow_count_takes_turns_between_workflows():
    tasks = _tasks("new_values", "ab", per_workflow=5, turns=1) + _tasks("new_values", "c", per_workflow=1)
    kept = spread_per_split(tasks, 4)
    assert [t.id for t in kept] == ["a-0", "a-1", "b-0", "c-0"]      # every workflow, then a second round


def test_a_metric_with_no_unit_says_why_in_the_report():
    single = [Episode(f"i{k}", workflow="w", turns=[UserTurn(0, "q", final_ok=True, passed=True)]) for k in range(2)]
    summary = summarise(single)
    assert summary["multi_turn_coherence"]["value"] is None
    assert summary["multi_turn_coherence"]["why"] == "no conversation evaluated"
    table = markdown_table(build_table({"craft": {"all": summary}}, baseline="stuffed"))
    assert "| Multi-turn coherence | n/a: no conversation evaluated |" in table
    talk = [Episode("c", workflow="t", turns=[UserTurn(0, "q", final_ok=True, passed=True),
                                              UserTurn(1, "and?", final_ok=True, passed=True)])]
    assert summarise(talk)["multi_turn_coherence"]["why"] == "no follow-up turn carries a constraint of an earlier turn"
    assert "why" not in summary["agent_score"]
